"""``migrate``'s test of which address is the sidecar (``groupcoord.cli.migrate.sidecars``), on
Metadata as a cluster and a sidecar in front of it answer it: the sidecar lists the cluster's
brokers (at addresses of its own) and its group coordinator, a node that holds no partition."""

from __future__ import annotations

from confluent_kafka.admin import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata

from groupcoord.cli.migrate import sidecars

SIDECAR_NODE = 1_258_955


def metadata(brokers: list[int], leaders: list[int]) -> ClusterMetadata:
    md = ClusterMetadata()
    for node in brokers:
        broker = BrokerMetadata()
        broker.id = node
        md.brokers[node] = broker
    topic = TopicMetadata()
    topic.topic = "orders"
    for p, leader in enumerate(leaders):
        partition = PartitionMetadata()
        partition.id, partition.leader, partition.replicas = p, leader, [leader]
        topic.partitions[p] = partition
    if leaders:
        md.topics["orders"] = topic
    return md


def test_the_sidecar_is_the_address_whose_group_coordinator_holds_no_partition() -> None:
    cluster = (metadata([1, 2], [1, 2]), 2)
    sidecar = (metadata([1, 2, SIDECAR_NODE], [1, 2]), SIDECAR_NODE)
    assert sidecars(cluster, sidecar) == (False, True)
    assert sidecars(sidecar, cluster) == (True, False)  # swapped
    assert sidecars(sidecar, sidecar) == (True, True)
    assert sidecars(cluster, cluster) == (False, False)


def test_a_broker_that_holds_nothing_yet_is_not_taken_for_a_sidecar() -> None:
    # The cluster's coordinator (broker 3) leads no partition, and no topic has any partition at
    # all: the sidecar in front lists broker 3 among the cluster's brokers, the cluster does not
    # list the sidecar's coordinator.
    for leaders in ([1, 2], []):
        cluster = (metadata([1, 2, 3], leaders), 3)
        sidecar = (metadata([1, 2, 3, SIDECAR_NODE], leaders), SIDECAR_NODE)
        assert sidecars(cluster, sidecar) == (False, True), leaders
        assert sidecars(sidecar, cluster) == (True, False), leaders
