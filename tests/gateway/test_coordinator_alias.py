"""The node ids under which each process presents a coordinator the cluster answered (gateway/rewrite.py)."""

from __future__ import annotations

from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.rewrite import ALIAS_BROKERS, coordinator_alias
from groupcoord.coordinator.runtime.placement import NODE_ID_BASE, NODE_ID_SPAN, derived_node_id

# The Java client takes Integer.MAX_VALUE - node id as a coordinator's connection id, so node ids
# stay below the top of the range (GatewayConfig.coordinator_node_id's bound).
JAVA_LIMIT = GatewayConfig.model_fields["coordinator_node_id"].metadata[-1].lt


def test_each_process_has_its_own_alias_for_each_broker_and_none_is_a_node_of_another_kind() -> None:
    processes = [derived_node_id("127.0.0.1", port) for port in range(9092, 9192)]
    brokers = [0, 1, 2, 111, ALIAS_BROKERS - 1]
    aliases = {coordinator_alias(p, b) for p in processes for b in brokers}
    assert len(aliases) == len(set(processes)) * len(brokers)
    assert all(NODE_ID_BASE + NODE_ID_SPAN <= a < JAVA_LIMIT for a in aliases)
    assert coordinator_alias(max(processes), ALIAS_BROKERS - 1) < JAVA_LIMIT


def test_a_broker_id_out_of_the_alias_range_keeps_its_own_id() -> None:
    node = derived_node_id("127.0.0.1", 9092)
    assert coordinator_alias(node, ALIAS_BROKERS) == ALIAS_BROKERS
    assert coordinator_alias(node, -1) == -1
