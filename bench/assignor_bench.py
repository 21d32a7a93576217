"""Assignor and heartbeat throughput benchmark (run on demand, never part of the test suite).

    python bench/assignor_bench.py [--repeat 5] [--out bench/results/assignors.json]

Measures, on this machine:
* the uniform assignor on homogeneous groups: 1,000 members x 10,000 partitions and
  10,000 members x 100,000 partitions, from scratch and sticky (one member joins);
* the full TargetAssignmentBuilder (assignor + record diff) for the 1,000 member group;
* steady-state ConsumerGroupHeartbeat handling for one shard holding a 1,000 member group,
  with the records and timers applied as the runtime would.
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

from coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec, UniformAssignor  # noqa: E402
from coordinator.groups.config import ConsumerGroupConfig  # noqa: E402
from coordinator.groups.consumer import ConsumerGroupsState, consumer_group_heartbeat  # noqa: E402
from coordinator.groups.consumer.target_assignment import TargetAssignmentBuilder  # noqa: E402
from coordinator.groups.context import GroupContext  # noqa: E402
from coordinator.groups.topics import TopicImage, TopicsImage  # noqa: E402
from coordinator.messages.consumer_group_heartbeat import (  # noqa: E402
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from coordinator.messages.schema import topic_id_string  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return {"best_s": min(samples), "median_s": statistics.median(samples), "runs": repeat}


def topics_image(partitions: int, topics: int = 10) -> TopicsImage:
    return TopicsImage.of(
        [TopicImage(f"t{i}", topic_id_string(uuid.UUID(int=i + 1)), partitions // topics) for i in range(topics)]
    )


def bench_uniform(members: int, partitions: int, repeat: int, topics: int = 10) -> dict[str, Any]:
    img = topics_image(partitions, topics)
    ids = frozenset(img.topic_id(n) or "" for n in img.topics)
    spec = GroupSpec({f"member-{j:06d}": MemberSubscriptionSpec(f"member-{j:06d}", ids) for j in range(members)})
    assignor = UniformAssignor()
    fresh = assignor.assign(spec, img)
    sticky_spec = GroupSpec(
        {
            **{m: MemberSubscriptionSpec(m, ids, fresh[m]) for m in fresh},
            "member-joining": MemberSubscriptionSpec("member-joining", ids),
        }
    )
    return {
        "members": members,
        "partitions": partitions,
        "topics": topics,
        "from_scratch": timed(lambda: assignor.assign(spec, img), repeat),
        "sticky_one_member_joins": timed(lambda: assignor.assign(sticky_spec, img), repeat),
    }


def bench_uniform_heterogeneous(members: int, partitions: int, repeat: int) -> dict[str, Any]:
    """Members subscribe to 3 of 10 topics each (a deterministic pattern)."""
    img = topics_image(partitions)
    ids = sorted(img.topic_id(n) or "" for n in img.topics)
    spec = GroupSpec(
        {
            f"member-{j:06d}": MemberSubscriptionSpec(
                f"member-{j:06d}", frozenset(ids[(j + k * 3) % 10] for k in range(3))
            )
            for j in range(members)
        }
    )
    assignor = UniformAssignor()
    return {
        "members": members,
        "partitions": partitions,
        "from_scratch": timed(lambda: assignor.assign(spec, img), repeat),
    }


def bench_target_builder(members: int, partitions: int, repeat: int) -> dict[str, Any]:
    from coordinator.groups.consumer.member import ConsumerGroupMember

    img = topics_image(partitions)
    names = tuple(sorted(img.topics))
    ids = frozenset(img.topic_id(n) or "" for n in names)
    group = {
        f"member-{j:06d}": ConsumerGroupMember(f"member-{j:06d}", subscribed_topic_names=names) for j in range(members)
    }
    subscribed = {m: ids for m in group}
    builder = TargetAssignmentBuilder("g", 1, UniformAssignor(), img)
    first = builder.build(group, subscribed, {}, 0).targets
    group2 = {**group, "member-joining": ConsumerGroupMember("member-joining", subscribed_topic_names=names)}
    subscribed2 = {**subscribed, "member-joining": ids}
    return {
        "members": members,
        "partitions": partitions,
        "one_member_joins_with_records": timed(lambda: builder.build(group2, subscribed2, first, 0), repeat),
    }


def bench_heartbeats(members: int, partitions: int, rounds: int) -> dict[str, Any]:
    img = topics_image(partitions)
    names = sorted(img.topics)
    config = ConsumerGroupConfig(assignment_interval_ms=0)
    state = ConsumerGroupsState()
    epoch: dict[str, int] = {}
    owned: dict[str, list[ConsumerGroupHeartbeatRequestTopicPartitions] | None] = {}

    def owning(
        tps: list[ConsumerGroupHeartbeatResponseTopicPartitions],
    ) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
        return [ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t.topic_id, partitions=t.partitions) for t in tps]

    now = 0

    def send(req: ConsumerGroupHeartbeatRequest) -> Any:
        result = consumer_group_heartbeat(state, req, GroupContext(now, img, config))
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
    assert group is not None and group.state().value == "Stable", group.state()
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
        "joins_per_s": members / join_s,
        "steady_heartbeats": count,
        "steady_heartbeats_per_s": count / steady,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results") / "assignors.json"))
    args = parser.parse_args()
    results = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "uniform_homogeneous": [
            bench_uniform(1_000, 10_000, args.repeat),
            bench_uniform(10_000, 100_000, max(1, args.repeat // 2)),
            # The shape of Kafka's own JMH figure (~1.7 ms): 5,000 members, 1,000 topics,
            # 10 partitions per member.
            bench_uniform(5_000, 50_000, args.repeat, topics=1_000),
        ],
        "uniform_heterogeneous": [bench_uniform_heterogeneous(1_000, 10_000, args.repeat)],
        "target_assignment_builder": [bench_target_builder(1_000, 10_000, args.repeat)],
        "heartbeat": [bench_heartbeats(1_000, 10_000, rounds=20)],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
