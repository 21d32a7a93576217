"""The cluster watch: an unreachable cluster is reported, and a log or directory topic the cluster
lost is created again and reported (issue 22, item 3; README "Broker outages")."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from groupcoord.coordinator.runtime.cluster_watch import ClusterWatch
from groupcoord.coordinator.runtime.log import LogTopicSpec, ensure_log_topic
from groupcoord.coordinator.runtime.placement import ensure_directory_topic
from groupcoord.local_broker import LocalBroker, free_port


def test_a_deleted_log_topic_is_created_again_and_reported(
    bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    spec = LogTopicSpec(unique_name, 2, 1)
    directory = f"{unique_name}-directory"
    ensure_log_topic(config, spec)
    ensure_directory_topic(config, directory, 1)
    recreated: list[list[str]] = []
    watch = ClusterWatch(config, spec, directory, on_recreated=recreated.append, on_back=lambda: None)
    watch.check()
    assert watch.reachable and watch.problem is None and recreated == []

    admin = AdminClient(config)  # kept: a client dropped at once fails its requests
    admin.delete_topics([unique_name])[unique_name].result(10)
    with caplog.at_level(logging.ERROR, logger="groupcoord.coordinator.runtime.cluster_watch"):
        watch.check()
    assert recreated == [[unique_name]]
    assert any(f"topic {unique_name} is gone" in r.getMessage() for r in caplog.records)
    # Reported (not ready) until the next round finds the topic still there.
    assert watch.reachable and watch.problem == f"lost and created again: {unique_name}"
    metadata = admin.list_topics(unique_name, timeout=10).topics[unique_name]
    assert metadata.error is None and len(metadata.partitions) == 2

    watch.check()  # the same incarnation again: nothing to report
    assert recreated == [[unique_name]]
    assert watch.problem is None


def test_an_unreachable_cluster_is_reported_until_it_is_back(unique_name: str) -> None:
    port = free_port()
    broker = LocalBroker(port=port).start()
    config = {"bootstrap.servers": broker.bootstrap, "log_level": 0}
    spec = LogTopicSpec(unique_name, 1, 1)
    ensure_log_topic(config, spec)
    ensure_directory_topic(config, f"{unique_name}-directory", 1)
    back: list[bool] = []
    recreated: list[list[str]] = []
    watch = ClusterWatch(
        config, spec, f"{unique_name}-directory", recreated.append, lambda: back.append(True), timeout_s=1
    )
    try:
        watch.check()
        # Gone at once (a SIGTERM'd Tansu accepts connections and answers nothing for 5 s, then
        # exits): either way the broker has exited when the next check runs.
        broker.stop(graceful=False)
        watch.check()
        assert not watch.reachable and watch.problem is not None and "unreachable" in watch.problem
        # The local broker keeps nothing: it comes back without either topic.
        broker = LocalBroker(port=port).start()
        watch.check()
        assert watch.reachable and back == [True]
        assert recreated == [[unique_name, f"{unique_name}-directory"]]
        assert watch.problem is not None and "lost and created again" in watch.problem
        watch.check()
        assert watch.problem is None
    finally:
        broker.stop(graceful=False)


def test_a_log_topic_whose_policy_deletes_records_is_an_error_once(
    bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by an operator probe: ``cleanup.policy=delete`` set on the log topic went unnoticed,
    while serving and at a restart; on Kafka it would delete the state after the retention."""
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    spec = LogTopicSpec(unique_name, 1, 1)
    directory = f"{unique_name}-directory"
    ensure_log_topic(config, spec)
    ensure_directory_topic(config, directory, 1)
    watch = ClusterWatch(config, spec, directory, on_recreated=lambda _: None, on_back=lambda: None)
    with caplog.at_level(logging.INFO, logger="groupcoord.coordinator.runtime.cluster_watch"):
        watch.check()
        assert watch.policy == "compact"
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        admin = AdminClient(config)  # kept: a client dropped at once fails its requests
        resource = ConfigResource(ResourceType.TOPIC, unique_name)
        resource.add_incremental_config(
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SET)
        )
        admin.incremental_alter_configs([resource])[resource].result(10)
        watch.check_policy()
        watch.check_policy()  # the same policy again: said once
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and f"log topic {unique_name} has cleanup.policy=delete" in errors[0], errors
        resource = ConfigResource(ResourceType.TOPIC, unique_name)
        resource.add_incremental_config(
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        )
        admin.incremental_alter_configs([resource])[resource].result(10)
        watch.check_policy()
    assert any(f"log topic {unique_name} has cleanup.policy=compact again" in r.getMessage() for r in caplog.records)
