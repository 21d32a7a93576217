"""The ``simple`` assignor of share groups (KIP-932; Kafka's SimpleAssignor).

In a share group a partition may be assigned to several members at once: the share-partition
hands each record to one of them. The rules, as Kafka 4.2 applies them:

* each partition is shared by ``ceil(members / partitions)`` members (one when members are fewer
  than partitions), so that every member gets work;
* those ``sharing x partitions`` slots are spread over the members as evenly as integers allow
  (member ``i`` of ``M`` gets ``ceil(S*(i+1)/M) - ceil(S*i/M)``);
* balance first, then stickiness: a member keeps what it was assigned unless it has too many,
  the partition is shared too widely, or it no longer subscribes to the topic; what is missing
  is then handed round the members still short of their count;
* all members subscribe to the same topics (homogeneous): the partitions of all topics form one
  pool; otherwise each topic is balanced on its own among the members subscribing to it.

Kafka walks hash maps; here members go in id order and partitions in (topic id, index) order,
so the result is a function of the input alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.groups.assignors.spec import GroupAssignment, GroupSpec
from groupcoord.coordinator.groups.topics import TopicsImage

TopicPartition = tuple[str, int]


class SimpleAssignor:
    name = "simple"

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
        members = sorted(group.members)
        current = {mid: {(t, p) for t, ps in group.members[mid].assigned.items() for p in ps} for mid in members}
        chosen: dict[str, set[TopicPartition]] = {mid: set() for mid in members}
        if group.is_homogeneous():
            subscribed = group.members[members[0]].subscribed_topic_ids if members else frozenset()
            pools = [(_partitions(subscribed, topics), members)]
        else:
            every = sorted({t for m in group.members.values() for t in m.subscribed_topic_ids})
            pools = [
                (_partitions([t], topics), [mid for mid in members if t in group.members[mid].subscribed_topic_ids])
                for t in every
            ]
        for pool, pool_members in pools:
            for mid, tps in _assign_pool(pool, pool_members, current).items():
                chosen[mid] |= tps
        out: GroupAssignment = {}
        for mid, tps in chosen.items():
            by_topic: dict[str, set[int]] = {}
            for t, p in tps:
                by_topic.setdefault(t, set()).add(p)
            out[mid] = {t: frozenset(ps) for t, ps in by_topic.items()}
        return out


def _partitions(topic_ids: Iterable[str], topics: TopicsImage) -> list[TopicPartition]:
    """Every partition of the topics the image has (a topic it lacks has none to assign)."""
    return [(t, p) for t in sorted(topic_ids) for p in range(max(topics.partition_count(t), 0))]


def desired_counts(partitions: int, members: int) -> list[int]:
    """How many partitions of a pool each member should hold (Kafka's desiredAssignmentCount)."""
    if partitions == 0 or members == 0:
        return [0] * members
    sharing = -(-members // partitions)
    slots = sharing * partitions
    return [-(-slots * (i + 1) // members) - -(-slots * i // members) for i in range(members)]


def _assign_pool(
    pool: list[TopicPartition], members: list[str], current: Mapping[str, set[TopicPartition]]
) -> dict[str, set[TopicPartition]]:
    if not members:
        return {}
    in_pool = set(pool)
    sharing = -(-len(members) // len(pool)) if pool else 0
    desired = dict(zip(members, desired_counts(len(pool), len(members)), strict=True))
    # Stickiness: what each member holds that is still assignable, up to its desired count
    # (revokeUnassignablePartitions and revokeOverfilledMembers).
    held = {mid: set(sorted(current.get(mid, set()) & in_pool)[: desired[mid]]) for mid in members}
    holders: dict[TopicPartition, list[str]] = {tp: [] for tp in pool}
    for mid in members:
        for tp in sorted(held[mid]):
            holders[tp].append(mid)
    # A partition shared by more members than ``sharing`` loses the extra ones (revokeOversharedPartitions).
    for tp in pool:
        for mid in holders[tp][sharing:]:
            held[mid].discard(tp)
        del holders[tp][sharing:]
    # Hand the missing shares round the members still short of their count (assignRemainingPartitions);
    # a partition no short member can take (they all hold it already) stays short, as in Kafka.
    unfilled = [mid for mid in members if len(held[mid]) < desired[mid]]
    cursor = 0
    for tp in pool:
        if not unfilled:
            break
        tried = 0
        while len(holders[tp]) < sharing and unfilled and tried < len(unfilled):
            cursor %= len(unfilled)
            mid = unfilled[cursor]
            if tp in held[mid]:
                cursor += 1
                tried += 1
                continue
            held[mid].add(tp)
            holders[tp].append(mid)
            tried = 0
            if len(held[mid]) >= desired[mid]:
                unfilled.pop(cursor)
            else:
                cursor += 1
    return held
