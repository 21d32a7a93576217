"""Large classic group: hundreds of wire-level JoinGroup/SyncGroup/Heartbeat members, one serve process.

    python bench/classic_group_bench.py [--members 500] [--partitions 1000] [--steady-seconds 20]
                                        [--restarts 5] [--protocol eager|cooperative|both]
                                        [--heartbeat-interval-s 3] [--initial-rebalance-delay-ms N]

Each member is an asyncio task with its own connection to the sidecar, speaking the classic
consumer protocol as a Kafka client does: JoinGroup (asking for its member id first), SyncGroup
(the leader assigns partitions in ranges), then Heartbeat every 3 s (``--heartbeat-interval-s``), rejoining when told the group
rebalances. ``eager`` members give up everything they own before rejoining; ``cooperative``
members keep what they own, the leader withholds a partition still owned by another member, and
a member that lost a partition rejoins at once (a second rebalance), as KIP-429 clients do.
Phases, per protocol, against one serve process and a fresh local broker:
- mass join: every member joins at the same moment; the time until every member has synced in
  one generation and the members own every partition between them;
- steady state: heartbeat latency p50/p99 and the serve process's CPU seconds per heartbeat;
- restarts: ``--restarts`` times, one member leaves (LeaveGroup) and joins again as a new member;
  each is a rebalance of the whole group: the time until it has converged again.
Beside them, the same run's raw figure: the broker's produce -> consume round trip. JSON to
bench/results/classic_group.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from large_group_bench import (
    Connection,
    Stats,
    cpu_seconds,
    handled_counts,
    handled_quantiles,
    serve_process,
    summary,
)
from runtime_bench import ROOT, cluster, percentile, raw_figures

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse

JOIN, JOIN_V = 11, 7
SYNC, SYNC_V = 14, 5
HEARTBEAT, HEARTBEAT_V = 12, 4
LEAVE, LEAVE_V = 13, 4
HEARTBEAT_INTERVAL_S = 3.0  # the Java consumer's default heartbeat.interval.ms
ASSIGNORS = {"eager": "range", "cooperative": "cooperative-sticky"}


def ranges(member_ids: list[str], partitions: int) -> dict[str, list[int]]:
    """Partitions 0..n-1 in contiguous ranges over the members in id order (Kafka's range assignor)."""
    ordered = sorted(member_ids)
    share, extra = divmod(partitions, len(ordered))
    out, start = {}, 0
    for i, mid in enumerate(ordered):
        count = share + (1 if i < extra else 0)
        out[mid] = list(range(start, start + count))
        start += count
    return out


class ClassicMember:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.conn: Connection | None = None
        self.stop = False
        self.leave = False
        self.rejoined = asyncio.Event()
        self.new_identity()

    def new_identity(self) -> None:
        self.member_id = ""
        self.generation = -1
        self.owned: list[int] = []

    async def call(self, api_key: int, version: int, body: Any, timed: bool = False) -> Any:
        assert self.conn is not None
        start = time.perf_counter()
        response = await self.conn.call(api_key, version, body)
        if timed:
            self.bench.stats.latencies_ms.append((time.perf_counter() - start) * 1000)
            self.bench.stats.heartbeats += 1
        return response

    async def run(self) -> None:
        while not self.stop:
            if self.leave:
                await self.call(
                    LEAVE,
                    LEAVE_V,
                    LeaveGroupRequest(
                        group_id=self.bench.group, members=[LeaveGroupRequestMemberIdentity(member_id=self.member_id)]
                    ),
                )
                self.bench.synced.pop(self.member_id, None)
                self.new_identity()
                self.leave = False
                await self.join_and_sync()
                self.rejoined.set()
            else:
                await self.join_and_sync()
            await self.heartbeat_until_rebalance()

    async def join_and_sync(self) -> None:
        bench = self.bench
        cooperative = bench.protocol == "cooperative"
        while not self.stop:
            if not cooperative:
                self.owned = []  # eager: everything is given up before rejoining
            subscription = Subscription(
                (bench.topic,), owned_partitions=(TopicPartitions(bench.topic, tuple(self.owned)),)
            )
            join: JoinGroupResponse = await self.call(
                JOIN,
                JOIN_V,
                JoinGroupRequest(
                    group_id=bench.group,
                    session_timeout_ms=45_000,
                    rebalance_timeout_ms=120_000,
                    member_id=self.member_id,
                    protocol_type="consumer",
                    protocols=[
                        JoinGroupRequestProtocol(
                            name=ASSIGNORS[bench.protocol], metadata=encode_subscription(subscription)
                        )
                    ],
                ),
            )
            if join.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = join.member_id
                continue
            if join.error_code:
                bench.error(join.error_code)
                if join.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                    self.member_id = ""
                await asyncio.sleep(0.2)
                continue
            self.member_id, self.generation = join.member_id, join.generation_id
            assignments = self.assign(join) if join.leader == join.member_id else []
            sync: SyncGroupResponse = await self.call(
                SYNC,
                SYNC_V,
                SyncGroupRequest(
                    group_id=bench.group,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    protocol_type="consumer",
                    protocol_name=join.protocol_name,
                    assignments=assignments,
                ),
            )
            if sync.error_code:
                bench.error(sync.error_code)
                continue  # REBALANCE_IN_PROGRESS and the like: join again
            assigned = [p for tp in decode_assignment(sync.assignment).assigned_partitions for p in tp.partitions]
            revoked = set(self.owned) - set(assigned)
            self.owned = assigned
            if cooperative and revoked:
                continue  # KIP-429: a member that gave partitions up rejoins at once
            bench.synced[self.member_id] = (self.generation, tuple(assigned))
            return

    def assign(self, join: JoinGroupResponse) -> list[SyncGroupRequestAssignment]:
        bench = self.bench
        target = ranges([m.member_id for m in join.members], bench.partitions)
        if bench.protocol == "cooperative":
            # A partition another member still owns is withheld until that member has given it up.
            owner = {
                p: m.member_id
                for m in join.members
                for tp in decode_subscription(m.metadata).owned_partitions
                for p in tp.partitions
            }
            target = {mid: [p for p in ps if owner.get(p, mid) == mid] for mid, ps in target.items()}
        return [
            SyncGroupRequestAssignment(
                member_id=mid,
                assignment=encode_assignment(Assignment((TopicPartitions(bench.topic, tuple(ps)),))),
            )
            for mid, ps in target.items()
        ]

    async def heartbeat_until_rebalance(self) -> None:
        while not self.stop and not self.leave:
            await self.bench.sleep(self, self.bench.heartbeat_interval_s)
            if self.stop or self.leave:
                return
            response: HeartbeatResponse = await self.call(
                HEARTBEAT,
                HEARTBEAT_V,
                HeartbeatRequest(group_id=self.bench.group, generation_id=self.generation, member_id=self.member_id),
                timed=True,
            )
            if response.error_code:
                if response.error_code != ErrorCode.REBALANCE_IN_PROGRESS:
                    self.bench.error(response.error_code)
                if response.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                    self.new_identity()
                self.bench.synced.pop(self.member_id, None)
                return


class Bench:
    def __init__(
        self, group: str, topic: str, partitions: int, protocol: str, heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S
    ) -> None:
        self.group, self.topic, self.partitions, self.protocol = group, topic, partitions, protocol
        self.heartbeat_interval_s = heartbeat_interval_s
        self.stats = Stats()
        # member id -> (generation, partitions) of its last completed SyncGroup
        self.synced: dict[str, tuple[int, tuple[int, ...]]] = {}
        self._wakes: dict[int, asyncio.Future[None]] = {}

    def error(self, code: int) -> None:
        name = ErrorCode(code).name
        self.stats.errors[name] = self.stats.errors.get(name, 0) + 1

    def converged(self, members: int) -> bool:
        if len(self.synced) != members:
            return False
        generations = {g for g, _ in self.synced.values()}
        owned = [p for _, ps in self.synced.values() for p in ps]
        return len(generations) == 1 and sorted(owned) == list(range(self.partitions))

    async def sleep(self, member: ClassicMember, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        wake = self._wakes[id(member)] = loop.create_future()

        def wake_up() -> None:
            if not wake.done():
                wake.set_result(None)

        timer = loop.call_later(seconds, wake_up)
        try:
            await wake
        finally:
            timer.cancel()
            del self._wakes[id(member)]

    def wake(self, member: ClassicMember) -> None:
        wake = self._wakes.get(id(member))
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def wait_converged(
        self, members: int, start: float, timeout: float, tasks: list[asyncio.Task[None]]
    ) -> float:
        while time.perf_counter() - start < timeout:
            for task in tasks:
                if task.done():
                    raise RuntimeError(f"a member stopped: {task.exception()!r}")
            if self.converged(members):
                return time.perf_counter() - start
            await asyncio.sleep(0.1)
        raise TimeoutError(f"the group did not converge in {timeout}s")


async def drive(
    args: argparse.Namespace, sidecar: tuple[str, int], topic: str, pid: int, protocol: str
) -> dict[str, Any]:
    bench = Bench(
        f"classic-{protocol}-{uuid.uuid4().hex[:8]}", topic, args.partitions, protocol, args.heartbeat_interval_s
    )
    members = [ClassicMember(bench) for _ in range(args.members)]
    gate = asyncio.Semaphore(200)

    async def connect(member: ClassicMember) -> None:
        async with gate:
            member.conn = await Connection.open(sidecar)

    await asyncio.gather(*(connect(m) for m in members))
    result: dict[str, Any] = {}
    tasks: list[asyncio.Task[None]] = []
    try:
        handled0, cpu0, start = handled_counts(pid, "Heartbeat"), cpu_seconds(pid), time.perf_counter()
        tasks = [asyncio.create_task(m.run()) for m in members]
        join_s = await bench.wait_converged(args.members, start, args.timeout, tasks)
        generation = next(iter(bench.synced.values()))[0]
        result["mass_join"] = {
            "converge_s": join_s,
            "generation": generation,
            **_summary(bench, pid, cpu0, join_s, handled0),
        }
        print(protocol, "mass join", json.dumps(result["mass_join"]), flush=True)

        bench.stats.__init__()  # type: ignore[misc]
        handled0, cpu0, start = handled_counts(pid, "Heartbeat"), cpu_seconds(pid), time.perf_counter()
        await asyncio.sleep(args.steady_seconds)
        result["steady"] = _summary(bench, pid, cpu0, time.perf_counter() - start, handled0)
        print(protocol, "steady", json.dumps(result["steady"]), flush=True)

        bench.stats.__init__()  # type: ignore[misc]
        handled0, cpu0, start = handled_counts(pid, "Heartbeat"), cpu_seconds(pid), time.perf_counter()
        restarts = []
        for member in members[: args.restarts]:
            began = time.perf_counter()
            member.rejoined.clear()
            member.leave = True
            bench.wake(member)
            await member.rejoined.wait()
            await bench.wait_converged(args.members, began, args.timeout, tasks)
            restarts.append(time.perf_counter() - began)
        if restarts:
            result["restarts"] = {
                "count": len(restarts),
                "converge_s": {"p50": percentile(restarts, 0.5), "max": max(restarts)},
                **_summary(bench, pid, cpu0, time.perf_counter() - start, handled0),
            }
            print(protocol, "restarts", json.dumps(result["restarts"]), flush=True)
    finally:
        for m in members:
            m.stop = True
            bench.wake(m)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in members:
            if m.conn is not None:
                m.conn.close()
    return result


def _summary(
    bench: Bench, pid: int, cpu0: float, seconds: float, handled0: list[tuple[float, float]]
) -> dict[str, Any]:
    out = summary(bench.stats, cpu_seconds(pid) - cpu0, seconds)
    out.pop("distinct_member_epochs", None)
    out["serve_handled_ms"] = handled_quantiles(handled0, handled_counts(pid, "Heartbeat"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--steady-seconds", type=float, default=20.0)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--protocol", choices=("eager", "cooperative", "both"), default="both")
    parser.add_argument("--timeout", type=float, default=600.0)
    # A member learns of a rebalance from its next heartbeat; short ones (and a short delay before
    # the first rebalance) make a smoke run quick. The defaults are the Java client's and Kafka's.
    parser.add_argument("--heartbeat-interval-s", type=float, default=HEARTBEAT_INTERVAL_S)
    parser.add_argument("--initial-rebalance-delay-ms", type=int, default=None)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "classic_group.json"))
    args = parser.parse_args()
    protocols = ("eager", "cooperative") if args.protocol == "both" else (args.protocol,)
    results: dict[str, Any] = {}
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"classic-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(120)
        # A SyncGroup from the leader carries one assignment per member.
        env = {"GROUPCOORD_GATEWAY__MAX_GROUP_REQUEST_ELEMENTS": str(max(10_000, 2 * args.members))}
        if args.initial_rebalance_delay_ms is not None:
            env["GROUPCOORD_GROUP"] = json.dumps(
                {"group.initial.rebalance.delay.ms": str(args.initial_rebalance_delay_ms)}
            )
        # Each protocol's members connect anew: room for all of them (closed ones may linger).
        with serve_process(bootstrap, args.members * len(protocols), env) as (sidecar, pid):
            for protocol in protocols:
                results[protocol] = asyncio.run(drive(args, sidecar, topic, pid, protocol))
        raw = raw_figures(bootstrap, 1000, 200)
    out = {
        "benchmark": "classic_group",
        "broker": label,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": {k: v for k, v in vars(args).items() if k not in ("out", "bootstrap")},
        "raw": raw,
        **results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
