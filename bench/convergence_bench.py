"""Time for a 10-member group to converge after one member joins, by protocol, with real clients.

    python bench/convergence_bench.py [--partitions 30] [--bootstrap HOST:PORT]

Scenarios, all with confluent-kafka (librdkafka) consumers and their default timings:
- the backing broker's own classic coordinator (clients talk to the broker directly);
- through groupcoord: classic eager (range), classic cooperative (cooperative-sticky), and the
  consumer protocol (KIP-848, server defaults: 5 s heartbeat interval).
"Converged" = every partition owned by exactly one member (per the rebalance callbacks), the
members balanced within one partition, and each member's own assignment agrees. JSON to
bench/results/convergence.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from runtime_bench import ROOT, cluster

from groupcoord.local_broker import free_port

MEMBERS = 10


class Group:
    def __init__(self, bootstrap: str, topic: str, conf: dict[str, Any]) -> None:
        self.bootstrap, self.topic, self.conf = bootstrap, topic, conf
        self.group = f"conv-{uuid.uuid4().hex[:8]}"
        self.owner: dict[int, str] = {}
        self.doubles = 0
        self.members: list[tuple[str, Consumer]] = []

    def add(self) -> str:
        name = f"m{len(self.members)}"
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": name, **self.conf})

        def assigned(_: Consumer, parts: list[TopicPartition]) -> None:
            for tp in parts:
                if self.owner.get(tp.partition) not in (None, name):
                    self.doubles += 1
                self.owner[tp.partition] = name

        def revoked(_: Consumer, parts: list[TopicPartition]) -> None:
            for tp in parts:
                if self.owner.get(tp.partition) == name:
                    del self.owner[tp.partition]

        c.subscribe([self.topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        self.members.append((name, c))
        return name

    def converged(self, partitions: int, newcomer: str | None) -> bool:
        if set(self.owner) != set(range(partitions)):
            return False
        if newcomer is not None and newcomer not in self.owner.values():
            return False
        counts = [sum(1 for n in self.owner.values() if n == name) for name, _ in self.members]
        if max(counts) - min(counts) > 1:
            return False  # a converged group is also a balanced one
        return all(
            {tp.partition for tp in c.assignment()} == {p for p, n in self.owner.items() if n == name}
            for name, c in self.members
        )

    def run_until(self, partitions: int, newcomer: str | None, timeout: float) -> float:
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            for _, c in self.members:
                c.poll(0.01)
            if self.converged(partitions, newcomer):
                return time.perf_counter() - start
        raise TimeoutError(f"no convergence in {timeout}s: owner={self.owner}")

    def close(self) -> None:
        for _, c in self.members:
            c.close()


def scenario(bootstrap: str, topic: str, partitions: int, conf: dict[str, Any]) -> dict[str, Any]:
    group = Group(bootstrap, topic, conf)
    try:
        for _ in range(MEMBERS):
            group.add()
        initial = group.run_until(partitions, None, 180)
        time.sleep(1)
        newcomer = group.add()
        join = group.run_until(partitions, newcomer, 180)
        return {"initial_s": initial, "join_converge_s": join, "double_ownership_events": group.doubles}
    finally:
        group.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "convergence.json"))
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"conv-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        port = free_port()
        serve = subprocess.Popen(
            [sys.executable, "-m", "groupcoord.cli.main", "serve", "-b", bootstrap, "--listen", f"127.0.0.1:{port}",
             "--log-topic", f"conv-log-{uuid.uuid4().hex[:6]}", "--partitions", "4"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            assert serve.stdout is not None and serve.stdout.readline().startswith("listening on")
            sidecar = f"127.0.0.1:{port}"
            classic = {"group.protocol": "classic"}
            plans = {
                "broker classic eager (range), direct": (
                    bootstrap,
                    {**classic, "partition.assignment.strategy": "range"},
                ),
                "broker classic cooperative-sticky, direct": (
                    bootstrap,
                    {**classic, "partition.assignment.strategy": "cooperative-sticky"},
                ),
                "groupcoord classic eager (range)": (sidecar, {**classic, "partition.assignment.strategy": "range"}),
                "groupcoord classic cooperative-sticky": (
                    sidecar,
                    {**classic, "partition.assignment.strategy": "cooperative-sticky"},
                ),
                "groupcoord consumer protocol (KIP-848)": (sidecar, {"group.protocol": "consumer"}),
            }
            for name, (where, conf) in plans.items():
                try:
                    results[name] = scenario(where, topic, args.partitions, conf)
                except Exception as exc:  # a broker that cannot run a scenario is reported, not fatal
                    results[name] = {"error": repr(exc)}
                print(name, results[name], flush=True)
        finally:
            serve.terminate()
            serve.wait(30)
    out = {"broker": label, "members": MEMBERS, "partitions": args.partitions, "results": results}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
