"""Placement identities and settings (no broker needed)."""

from __future__ import annotations

import pytest

from coordinator.config import ConfigError, load_settings
from coordinator.runtime.placement import NODE_ID_BASE, NODE_ID_SPAN, derived_instance_id, derived_node_id
from coordinator.server import placement_config


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
    config = placement_config(settings, "h", 9094)
    assert config.group_id == "groupcoord-placement-mylog"
    assert config.directory_topic == "mylog-directory"
    assert config.session_timeout_ms == 7000
    assert config.instance_id is None  # dynamic membership unless asked for
    monkeypatch.setenv("GROUPCOORD_PLACEMENT__STATIC_MEMBERSHIP", "true")
    assert placement_config(load_settings(log_topic="mylog"), "h", 9094).instance_id == "groupcoord-h-9094"


def test_a_bad_assignment_strategy_is_one_readable_error() -> None:
    with pytest.raises(ConfigError, match="placement.assignment_strategy"):
        load_settings(placement={"assignment_strategy": "sticky-ish"})
