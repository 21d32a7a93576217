"""Cross-tenant attacks through the sidecar, answered with Kafka's authorization errors.

ACLs (tests/security/conftest.py): alice owns groups "alice-*", bob owns "bob-*"; topics
"shared-*" are readable by all except "shared-secret" for bob; "alice-only-*" by alice alone.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.coordinator.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import authenticated, committed, create_topic, listed

pytestmark = pytest.mark.integration

GROUP_DENIED, TOPIC_DENIED = 30, 29


def commit(group: str, offsets: dict[str, int]) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequestTopic(
                name=t, partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=o)]
            )
            for t, o in offsets.items()
        ],
    )


def codes(answer: OffsetCommitResponse) -> dict[str, int]:
    return {t.name: t.partitions[0].error_code for t in answer.topics}


def test_cross_tenant_attacks(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    tag = uuid.uuid4().hex[:8]
    alice_group, bob_group = f"alice-{tag}", f"bob-{tag}"
    shared, secret, private = f"shared-{tag}", "shared-secret", f"alice-only-{tag}"
    for topic in (shared, private):
        create_topic(sasl_cluster, topic)

    async def scenario() -> None:
        alice = await authenticated(sidecar, "alice")
        bob = await authenticated(sidecar, "bob")
        # Alice's own group: allowed topics commit, the topic she may not read is refused.
        answer = await alice.call(8, 8, commit(alice_group, {shared: 10, private: 11}))
        assert isinstance(answer, OffsetCommitResponse)
        assert codes(answer) == {shared: 0, private: 0}
        answer = await bob.call(
            8, 8, commit(bob_group, {shared: 5, secret: 6, private: 7, "__group_coordinator_log": 1})
        )
        assert isinstance(answer, OffsetCommitResponse)
        assert codes(answer) == {
            shared: 0,
            secret: TOPIC_DENIED,
            private: TOPIC_DENIED,
            "__group_coordinator_log": TOPIC_DENIED,
        }

        # Bob against alice's group: every API refused with GROUP_AUTHORIZATION_FAILED.
        answer = await bob.call(8, 8, commit(alice_group, {shared: 999}))
        assert isinstance(answer, OffsetCommitResponse) and codes(answer) == {shared: GROUP_DENIED}
        fetched = await bob.call(
            9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=alice_group, topics=None)])
        )
        assert isinstance(fetched, OffsetFetchResponse)
        assert fetched.groups[0].error_code == GROUP_DENIED and fetched.groups[0].topics == []
        described = await bob.call(15, 5, DescribeGroupsRequest(groups=[alice_group, bob_group]))
        assert isinstance(described, DescribeGroupsResponse)
        assert [(g.group_id, g.error_code) for g in described.groups] == [(alice_group, GROUP_DENIED), (bob_group, 0)]
        cg = await bob.call(69, 0, ConsumerGroupDescribeRequest(group_ids=[alice_group]))
        assert isinstance(cg, ConsumerGroupDescribeResponse) and cg.groups[0].error_code == GROUP_DENIED
        deleted = await bob.call(42, 2, DeleteGroupsRequest(groups_names=[alice_group]))
        assert isinstance(deleted, DeleteGroupsResponse) and deleted.results[0].error_code == GROUP_DENIED
        od = await bob.call(
            47,
            0,
            OffsetDeleteRequest(
                group_id=alice_group,
                topics=[
                    OffsetDeleteRequestTopic(name=shared, partitions=[OffsetDeleteRequestPartition(partition_index=0)])
                ],
            ),
        )
        assert isinstance(od, OffsetDeleteResponse) and od.error_code == GROUP_DENIED
        joined = await bob.call(
            11,
            7,
            JoinGroupRequest(
                group_id=alice_group,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
            ),
        )
        assert isinstance(joined, JoinGroupResponse) and joined.error_code == GROUP_DENIED
        hb = await bob.call(12, 4, HeartbeatRequest(group_id=alice_group, generation_id=1, member_id="x"))
        assert isinstance(hb, HeartbeatResponse) and hb.error_code == GROUP_DENIED
        cgh = await bob.call(
            68,
            0,
            ConsumerGroupHeartbeatRequest(
                group_id=alice_group, member_epoch=0, rebalance_timeout_ms=10_000, subscribed_topic_names=[shared]
            ),
        )
        assert isinstance(cgh, ConsumerGroupHeartbeatResponse) and cgh.error_code == GROUP_DENIED
        # FindCoordinator: a group key bob may not DESCRIBE is refused, with no node (Kafka's
        # KafkaApis.handleFindCoordinatorRequest); batched (v4) per key, one key (v3) at the top.
        found = await bob.call(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[alice_group, bob_group]))
        assert isinstance(found, FindCoordinatorResponse)
        (denied, own) = found.coordinators
        assert (denied.key, denied.error_code, denied.node_id, denied.port) == (alice_group, GROUP_DENIED, -1, -1)
        assert (own.key, own.error_code, own.port) == (bob_group, 0, sidecar.port)
        found = await bob.call(10, 3, FindCoordinatorRequest(key_type=0, key=alice_group))
        assert isinstance(found, FindCoordinatorResponse)
        assert (found.error_code, found.node_id, found.host) == (GROUP_DENIED, -1, "")
        # ListGroups shows each tenant only its own groups.
        assert alice_group not in await listed(bob) and bob_group in await listed(bob)
        assert bob_group not in await listed(alice) and alice_group in await listed(alice)

        # Nothing of alice's changed, and she sees both offsets; a named topic she may not
        # describe is refused, an unnamed one left out.
        assert await committed(alice, alice_group, shared) == 10
        assert await committed(alice, alice_group, private) == 11
        mine = await bob.call(
            9,
            8,
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id=bob_group,
                        topics=[OffsetFetchRequestTopics(name=shared, partition_indexes=[0]),
                                OffsetFetchRequestTopics(name=private, partition_indexes=[0])],
                    )
                ]
            ),
        )  # fmt: skip
        assert isinstance(mine, OffsetFetchResponse)
        got = {t.name: (t.partitions[0].committed_offset, t.partitions[0].error_code) for t in mine.groups[0].topics}
        # (bob's DENY of READ on shared-secret does not deny DESCRIBE, as in Kafka; alice-only-* he
        # has no ACL for at all.)
        assert got == {shared: (5, 0), private: (-1, TOPIC_DENIED)}
        for client in (alice, bob):
            await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
