"""Assignor and heartbeat throughput benchmark (run on demand, never part of the test suite).

    python bench/assignor_bench.py [--rounds 5] [--members 5000 --topics 1000 --partitions 50]
                                   [--out bench/results/assignors.json]

Kafka's shapes (jmh-benchmarks ServerSideAssignorBenchmark / TargetAssignmentBuilderBenchmark):
5,000 members, 1,000 topics x 50 partitions (10 partitions per member); subscriptions homogeneous
(everyone subscribes to every topic) or heterogeneous (5 buckets of members, each subscribed to
its own fifth of the topics); racks none, ``members`` (Kafka's isRackAware: members get
rack<i % 3>, partitions carry no rack, so the assignor has no rack to match) or ``replicas``
(beyond Kafka's: partition p also lives on rack<p % 3> and rack<(p + 1) % 3>, so the
rack-aware placement really runs).

For each shape and assignor (uniform, range):
* ``assignor_full``: the assignor alone, every member new (Kafka's FULL);
* ``assignor_sticky_join``: the assignor alone, 4,999 members with their targets and one new
  member (Kafka's INCREMENTAL: still a whole-group computation);
and, for uniform, the whole target-assignment step a heartbeat runs (compute_target_assignment:
subscriptions resolved, assignor, records for the changed members) on a group held as replay
holds it, for one member joining and one member leaving, each computed two ways:
* ``full``: the assignor over the whole group (the group's TargetIndex withheld);
* ``incremental``: with the TargetIndex (falls back to full where it does not apply: say which).

Every figure is the median of ``--rounds`` rounds of CPU time (time.process_time: the machine is
shared, so wall time mostly measures the neighbours) with the wall-time median beside it, and
``anchor``: the same run's time for the least any Python full assignment does, one dict entry per
partition, so runs on busier or faster machines compare as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groupcoord.coordinator.groups.assignors import (  # noqa: E402
    GroupSpec,
    MemberSubscriptionSpec,
    PartitionAssignor,
    RangeAssignor,
    UniformAssignor,
)
from groupcoord.coordinator.groups.config import ConsumerGroupConfig  # noqa: E402
from groupcoord.coordinator.groups.consumer import ConsumerGroupsState, consumer_group_heartbeat  # noqa: E402
from groupcoord.coordinator.groups.consumer.assignment import compute_target_assignment  # noqa: E402
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup  # noqa: E402
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember  # noqa: E402
from groupcoord.coordinator.groups.context import GroupContext  # noqa: E402
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage  # noqa: E402
from groupcoord.coordinator.messages.consumer_group_heartbeat import (  # noqa: E402
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.messages.schema import topic_id_string  # noqa: E402

RACKS = 3
BUCKETS = 5
CONFIG = ConsumerGroupConfig(assignment_interval_ms=0)


def timed(fn: Callable[[], Any], rounds: int, before: Callable[[], Any] | None = None) -> dict[str, Any]:
    cpu, wall = [], []
    for _ in range(rounds):
        if before is not None:
            before()
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {
        "cpu_ms_median": round(statistics.median(cpu) * 1e3, 3),
        "wall_ms_median": round(statistics.median(wall) * 1e3, 3),
        "cpu_ms_rounds": [round(s * 1e3, 3) for s in cpu],
    }


class Shape:
    def __init__(self, members: int, topics: int, partitions: int, subscription: str, racks: str) -> None:
        self.members, self.subscription, self.racks = members, subscription, racks
        self.names = [f"topic-{i}" for i in range(topics)]

        def prack(p: int) -> frozenset[str]:
            return frozenset({f"rack{p % RACKS}", f"rack{(p + 1) % RACKS}"})

        self.image = TopicsImage.of(
            TopicImage(
                name,
                topic_id_string(uuid.UUID(int=i + 1)),
                partitions,
                tuple(prack(p) for p in range(partitions)) if racks == "replicas" else (),
            )
            for i, name in enumerate(self.names)
        )
        per_bucket = -(-topics // BUCKETS)
        members_per_bucket = -(-members // BUCKETS)
        self.bucket_names = [tuple(self.names[b * per_bucket : (b + 1) * per_bucket]) for b in range(BUCKETS)]
        self.members_per_bucket = members_per_bucket

    def subscribed_names(self, j: int) -> tuple[str, ...]:
        if self.subscription == "homogeneous":
            return tuple(self.names)
        return self.bucket_names[min(j // self.members_per_bucket, BUCKETS - 1)]

    def rack(self, j: int) -> str | None:
        return None if self.racks == "none" else f"rack{j % RACKS}"

    def topic_ids(self, names: tuple[str, ...]) -> frozenset[str]:
        return frozenset(self.image.topic_id(n) or "" for n in names)

    def spec(self, count: int, targets: dict[str, Any] | None = None) -> GroupSpec:
        shared: dict[tuple[str, ...], frozenset[str]] = {}
        specs = {}
        for j in range(count):
            names = self.subscribed_names(j)
            ids = shared.setdefault(names, self.topic_ids(names))
            mid = f"member{j}"
            specs[mid] = MemberSubscriptionSpec(mid, ids, (targets or {}).get(mid, {}), rack_id=self.rack(j))
        return GroupSpec(specs)


def anchor(shape: Shape, rounds: int) -> dict[str, Any]:
    pairs = [(t, p) for t in shape.names for p in range(shape.image.topics[t].partitions)]
    return timed(lambda: {tp: "m" for tp in pairs}, rounds)


def bench_assignor(shape: Shape, assignor: PartitionAssignor, rounds: int) -> dict[str, Any]:
    full_spec = shape.spec(shape.members)
    first = assignor.assign(shape.spec(shape.members - 1), shape.image)
    sticky = shape.spec(shape.members - 1, first)
    last = shape.members - 2  # the newcomer subscribes as the last member does (Kafka's setup)
    joining = MemberSubscriptionSpec(
        "newMember", sticky.members[f"member{last}"].subscribed_topic_ids, rack_id=shape.rack(shape.members - 1)
    )
    sticky = GroupSpec({**sticky.members, "newMember": joining})
    return {
        "assignor_full": timed(lambda: assignor.assign(full_spec, shape.image), rounds),
        "assignor_sticky_join": timed(lambda: assignor.assign(sticky, shape.image), rounds),
    }


def group_of(shape: Shape, count: int) -> ConsumerGroup:
    """A group of ``count`` stable members holding the uniform assignor's targets, as replay builds it."""
    group = ConsumerGroup("bench")
    for j in range(count):
        # A fresh tuple per member, as each member's own record brings it; put_member shares them.
        names = tuple(list(shape.subscribed_names(j)))
        group.put_member(ConsumerGroupMember(f"member{j}", rack_id=shape.rack(j), subscribed_topic_names=names))
    result = compute_target_assignment("bench", 1, group.members, {}, {}, shape.image, CONFIG, 0)
    for mid, parts in result.targets.items():
        group.put_target(mid, parts)
    return group


def bench_target(shape: Shape, rounds: int) -> dict[str, Any]:
    """One member joins a group of members - 1; one member leaves a group of ``members``."""
    out: dict[str, Any] = {}
    group = group_of(shape, shape.members - 1)
    newcomer = ConsumerGroupMember(
        "newMember",
        rack_id=shape.rack(shape.members - 1),
        subscribed_topic_names=tuple(list(shape.subscribed_names(shape.members - 2))),
    )
    view = {**group.members, "newMember": newcomer}
    used: list[int] = []

    def join(index: bool) -> Callable[[], Any]:
        def run() -> None:
            r = compute_target_assignment(
                "bench", 2, view, {}, group.target, shape.image, CONFIG, 0, group.target_index() if index else None
            )
            used.append(len(r.records))

        return run

    out["one_member_joins"] = {
        "full": timed(join(False), rounds),
        "incremental": timed(join(True), rounds),
        "records_written": used[-1],
    }
    group = group_of(shape, shape.members)
    leaver = f"member{shape.members // 2}"
    parts = group.target[leaver]
    view = {m: v for m, v in group.members.items() if m != leaver}

    def drop() -> None:  # the leave's tombstone is replayed before the next assignment runs
        group.put_target(leaver, parts)
        group.drop_target(leaver)

    def leave(index: bool) -> Callable[[], Any]:
        def run() -> None:
            r = compute_target_assignment(
                "bench", 2, view, {}, group.target, shape.image, CONFIG, 0, group.target_index() if index else None
            )
            used.append(len(r.records))

        return run

    out["one_member_leaves"] = {
        "full": timed(leave(False), rounds, drop),
        "incremental": timed(leave(True), rounds, drop),
        "records_written": used[-1],
    }
    return out


def incremental_applies(shape: Shape) -> str:
    if shape.subscription != "homogeneous":
        return "no: heterogeneous subscriptions (the full assignor runs; it splits the buckets into homogeneous parts)"
    if shape.racks == "replicas":
        return "no: rack-aware placement (the full assignor runs)"
    return "yes"


def bench_heartbeats(members: int, partitions: int, rounds: int) -> dict[str, Any]:
    img = TopicsImage.of(
        [TopicImage(f"t{i}", topic_id_string(uuid.UUID(int=i + 1)), partitions // 10) for i in range(10)]
    )
    names = sorted(img.topics)
    state = ConsumerGroupsState()
    epoch: dict[str, int] = {}
    owned: dict[str, list[ConsumerGroupHeartbeatRequestTopicPartitions] | None] = {}

    def owning(
        tps: list[ConsumerGroupHeartbeatResponseTopicPartitions],
    ) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
        return [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t.topic_id, partitions=t.partitions) for t in tps]

    now = 0

    def send(req: ConsumerGroupHeartbeatRequest) -> Any:
        result = consumer_group_heartbeat(state, req, GroupContext(now, img, CONFIG))
        for r in result.records:
            state.replay(r)
        return result.response

    t0 = time.perf_counter()
    for j in range(members):
        mid = f"member-{j:06d}"
        now += 1
        resp = send(
            ConsumerGroupHeartbeatRequest(
                group_id="bench",
                member_id=mid,
                member_epoch=0,
                rebalance_timeout_ms=30000,
                subscribed_topic_names=names,
                topic_partitions=[],
            )
        )
        epoch[mid] = resp.member_epoch
        owned[mid] = owning(resp.assignment.topic_partitions) if resp.assignment else []
    join_s = time.perf_counter() - t0
    # Converge: everyone acknowledges until the group is stable.
    for _ in range(10):
        for mid in epoch:
            now += 1
            resp = send(
                ConsumerGroupHeartbeatRequest(
                    group_id="bench", member_id=mid, member_epoch=epoch[mid], topic_partitions=owned[mid]
                )
            )
            epoch[mid] = resp.member_epoch
            if resp.assignment is not None:
                owned[mid] = owning(resp.assignment.topic_partitions)
        group = state.group("bench")
        assert group is not None
        if group.state().value == "Stable":
            break
    group = state.group("bench")
    assert group is not None
    assert group.state().value == "Stable", group.state()
    t0 = time.perf_counter()
    count = 0
    for _ in range(rounds):
        for mid in epoch:
            now += 1
            send(ConsumerGroupHeartbeatRequest(group_id="bench", member_id=mid, member_epoch=epoch[mid]))
            count += 1
    steady = time.perf_counter() - t0
    return {
        "members": members,
        "partitions": partitions,
        "joins_per_s (assignment interval 0: one target assignment per join)": round(members / join_s, 1),
        "steady_heartbeats": count,
        "steady_heartbeats_per_s": round(count / steady),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--members", type=int, default=5_000)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=50, help="per topic")
    parser.add_argument("--heartbeat-members", type=int, default=1_000)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results") / "assignors.json"))
    args = parser.parse_args()
    shapes = []
    for subscription in ("homogeneous", "heterogeneous"):
        for racks in ("none", "members", "replicas"):
            shape = Shape(args.members, args.topics, args.partitions, subscription, racks)
            entry: dict[str, Any] = {"subscription": subscription, "racks": racks}
            for name, assignor in (("uniform", UniformAssignor()), ("range", RangeAssignor())):
                entry[name] = bench_assignor(shape, assignor, args.rounds)
            entry["uniform_target_assignment"] = bench_target(shape, args.rounds)
            entry["uniform_target_assignment"]["incremental_applies"] = incremental_applies(shape)
            print(json.dumps(entry), flush=True)
            shapes.append(entry)
    results = {
        "command": " ".join(["python", "bench/assignor_bench.py", *sys.argv[1:]]),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "params": {
            "members": args.members,
            "topics": args.topics,
            "partitions_per_topic": args.partitions,
            "rounds": args.rounds,
            "kafka_jmh": "ServerSideAssignorBenchmark / TargetAssignmentBuilderBenchmark shapes",
        },
        "anchor_one_dict_entry_per_partition": anchor(
            Shape(args.members, args.topics, args.partitions, "homogeneous", "none"), args.rounds
        ),
        "shapes": shapes,
        "heartbeat": [bench_heartbeats(args.heartbeat_members, 10 * args.heartbeat_members, rounds=20)],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
