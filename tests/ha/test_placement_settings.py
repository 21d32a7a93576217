"""Placement identities and settings (no broker needed)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.config import ConfigError, load_settings
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.runtime.placement import NODE_ID_BASE, NODE_ID_SPAN, derived_instance_id, derived_node_id
from groupcoord.coordinator.server import PlacementMode, placement_config, placement_mode

TANSU_LIKE = [ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT]
KAFKA_4 = [*TANSU_LIKE, ApiKey.CONSUMER_GROUP_HEARTBEAT]


def test_node_id_is_stable_and_clear_of_broker_ids() -> None:
    a = derived_node_id("10.0.0.1", 9094)
    assert a == derived_node_id("10.0.0.1", 9094)
    assert a != derived_node_id("10.0.0.1", 9095)
    assert NODE_ID_BASE <= a < NODE_ID_BASE + NODE_ID_SPAN


def test_instance_id_uses_only_characters_kafka_accepts() -> None:
    assert derived_instance_id("groupcoord-0.groupcoord", 9094) == "groupcoord-groupcoord-0.groupcoord-9094"
    assert derived_instance_id("::1", 9094) == "groupcoord-__1-9094"


def test_placement_defaults_follow_the_log_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS", "7000")
    settings = load_settings(log_topic="mylog", bootstrap_servers="k:9092")
    config = placement_config(settings, "h", 9094, placement_mode(settings.placement, TANSU_LIKE))
    assert config.group_id == "groupcoord-placement-mylog"
    assert config.directory_topic == "mylog-directory"
    assert config.session_timeout_ms == 7000
    assert config.instance_id is None  # dynamic membership where the cluster cannot expire static members
    assert config.assignment_strategy == "roundrobin"
    modern = load_settings(log_topic="mylog")
    config = placement_config(modern, "h", 9094, placement_mode(modern.placement, KAFKA_4))
    assert config.instance_id == "groupcoord-h-9094" and config.assignment_strategy == "cooperative-sticky"


def test_auto_placement_follows_the_cluster_and_explicit_settings_win(monkeypatch: pytest.MonkeyPatch) -> None:
    auto = load_settings().placement
    assert placement_mode(auto, TANSU_LIKE) == PlacementMode("roundrobin", False)
    assert placement_mode(auto, KAFKA_4) == PlacementMode("cooperative-sticky", True)
    monkeypatch.setenv("GROUPCOORD_PLACEMENT__STATIC_MEMBERSHIP", "false")
    monkeypatch.setenv("GROUPCOORD_PLACEMENT__ASSIGNMENT_STRATEGY", "range")
    explicit = load_settings().placement
    assert placement_mode(explicit, KAFKA_4) == PlacementMode("range", False)
    monkeypatch.setenv("GROUPCOORD_PLACEMENT__STATIC_MEMBERSHIP", "true")
    assert placement_mode(load_settings().placement, TANSU_LIKE) == PlacementMode("range", True)


def test_a_bad_assignment_strategy_is_one_readable_error() -> None:
    with pytest.raises(ConfigError, match="placement.assignment_strategy"):
        load_settings(placement={"assignment_strategy": "sticky-ish"})
