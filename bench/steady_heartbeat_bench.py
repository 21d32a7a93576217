"""A steady ConsumerGroupHeartbeat's Python path, in process, stage by stage (issue #26 item 2).

    python bench/steady_heartbeat_bench.py [--members 5000] [--partitions 10000] [--rounds 5]
                                           [--profile out.prof] [--joins]

What ``bench/large_group_bench.py`` measures on the wire, without the sockets and the loop: the
same group (``members`` KIP-848 members sharing one topic of ``partitions``, joined and
converged through the real shard on the simulated log of tests/sim), then every member's steady
heartbeat frame handed to ``ClientConnection._answer_at_once`` as the gateway does when it
arrives, with ``serve``'s handler chain (metered, secured, handover relay, the coordinator's
handler, the service, ``Shard.write_now``, the group logic) and its metrics. The answer's write
is a no-op here. Beside the whole path, each stage alone, on the same frames (thread CPU time,
best of ``rounds`` passes over all members, in microseconds per heartbeat):

- ``route``: the frame's routing decision (header, checks, the decode memo);
- ``context``: the connection's context for the handler;
- ``handler``: the handler chain's ``answer_now`` (``group_logic`` of it: the shard's handler
  on the live state, no runtime around it);
- ``encode``: the answer's frame (the answer memo);
- ``whole``: frame to answer bytes.

Loopback sockets and the loop's turn come on top (``bench/asyncio_floor.py``).

``--joins``: a mass join's group logic instead, stage by stage (``measure_joins``): ``members``
first heartbeats on a fresh shard, each through the handler, its records' encoding, their replay
into the live state and their replay into the committed state as the read-back does it.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from groupcoord.coordinator.gateway import routing  # noqa: E402
from groupcoord.coordinator.gateway.framing import peek_request  # noqa: E402
from groupcoord.coordinator.groups.context import RequestContext  # noqa: E402
from groupcoord.coordinator.messages.consumer_group_heartbeat import (  # noqa: E402
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.coordinator.messages.schema import Message  # noqa: E402
from groupcoord.coordinator.runtime.api import replay_noted, replay_noting  # noqa: E402
from groupcoord.coordinator.service.gateway_handler import _facts as _request_facts  # noqa: E402
from groupcoord.records.offset_commit_run import encode_columns  # noqa: E402
from tests.sim.serve_chain import HB_VERSION, World  # noqa: E402


def _best(rounds: int, one_pass: Callable[[], int]) -> float:
    """Microseconds per item of the best of ``rounds`` passes (thread CPU time)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        n = one_pass()
        best = min(best, (time.thread_time() - start) * 1e6 / n)
    return best


def measure(world: World, rounds: int) -> dict[str, float]:
    frames = world.frames()
    conns = world.connections(len(frames))
    pairs = list(zip(conns, frames, strict=True))
    for conn, frame in pairs:  # warm each connection's memos, as a steady member's have been
        assert conn._answer_at_once(frame)
    out: dict[str, float] = {}

    def whole() -> int:
        for conn, frame in pairs:
            conn._answer_at_once(frame)
        return len(pairs)

    out["whole"] = _best(rounds, whole)

    def route() -> int:
        for conn, frame in pairs:
            key, version, _ = peek_request(frame)
            routing.route(key, version, frame, conn._facts(conn._at_once_memo.decode))
        return len(pairs)

    out["route"] = _best(rounds, route)
    decided = []
    for conn, frame in pairs:
        key, version, _ = peek_request(frame)
        decision = routing.route(key, version, frame, conn._facts(conn._at_once_memo.decode))
        assert isinstance(decision, routing.CallHandler)
        decided.append((conn, decision.request))

    def context() -> int:
        for conn, request in decided:
            conn._context(request.header)
        return len(decided)

    out["context"] = _best(rounds, context)
    called = [
        (conn, conn._context(request.header), request.body)
        for conn, request in decided
        if isinstance(request.body, ConsumerGroupHeartbeatRequest)
    ]
    answer_now = world.handler.answer_now

    def handler() -> int:
        for _, ctx, body in called:
            answer_now(ctx, body)
        return len(called)

    out["handler"] = _best(rounds, handler)
    # The chain layer by layer: each figure includes the layers below it.
    layer: Any = world.handler.inner
    for name in ("handler.secured", "handler.relay", "handler.api"):
        answer_layer = layer.answer_now

        def one_layer(answer_layer: Any = answer_layer) -> int:
            for _, ctx, body in called:
                answer_layer(ctx, body)
            return len(called)

        out[name] = _best(rounds, one_layer)
        layer = getattr(layer, "inner", None)
    service = world.service
    facts = [(body, _request_facts(ctx)) for _, ctx, body in called]

    def service_now() -> int:
        for body, request_facts in facts:
            service.consumer_group_heartbeat_now(body, request_facts)
        return len(facts)

    out["handler.service"] = _best(rounds, service_now)
    shard = world.shard
    ops = [service._consumer_heartbeat(body, request_facts)[0] for body, request_facts in facts]

    def shard_now() -> int:
        for op in ops:
            shard.write_now(op)
        return len(ops)

    out["handler.shard"] = _best(rounds, shard_now)
    request_context = RequestContext(api_version=HB_VERSION, client_id="bench", client_host="/127.0.0.1")
    live, handlers = world.shard.live, world.handlers
    now = world.loop.clock.now_ms()

    def group_logic() -> int:
        for _, _, body in called:
            handlers.consumer_group_heartbeat(live, body, now, request_context)
        return len(called)

    out["group_logic"] = _best(rounds, group_logic)
    answered = [(conn, ctx, a) for conn, ctx, body in called if isinstance(a := answer_now(ctx, body), Message)]

    def encode() -> int:
        for conn, ctx, answer in answered:
            conn._encoded(ctx, answer, conn._answer_memo.encode)
        return len(answered)

    out["encode"] = _best(rounds, encode)
    return {k: round(v, 2) for k, v in out.items()}


def measure_joins(members: int, partitions: int, rounds: int) -> dict[str, Any]:
    """A mass join's group logic, stage by stage (``--joins``): ``members`` first heartbeats,
    one after another on a fresh shard, each through the stages a flush and its read-back run
    (the handler on the live state, its records' encoding, their replay into the live state,
    their replay into the committed state as the read-back does it: ``api.replay_noted``), with
    the thread's CPU time around each; then the same joins through the shard on the simulated log
    (queue, flush, append, read-back, release; thread CPU time). Best of ``rounds`` fresh
    shards, in microseconds per join."""
    context = RequestContext(api_version=HB_VERSION, client_id="bench", client_host="/127.0.0.1")
    requests = World.joins(members)
    stages = ("handler", "encode", "replay_live", "replay_read_back")
    best: dict[str, float] = dict.fromkeys((*stages, "stages", "shard"), float("inf"))
    clock = time.thread_time  # CPU time: other processes' load does not count
    for _ in range(rounds):
        world = World(members, partitions, converge=False)
        handlers, shard, now = world.handlers, world.shard, world.loop.clock.now_ms()
        live, committed = handlers.create_state(), handlers.create_state()
        spent = dict.fromkeys(stages, 0.0)
        for request in requests:
            t0 = clock()
            result = handlers.consumer_group_heartbeat(live, request, now, context)
            t1 = clock()
            encode_columns(result.records)
            t2 = clock()
            notes = replay_noting(live, result.records)
            t3 = clock()
            replay_noted(committed, result.records, notes)
            t4 = clock()
            spent["handler"] += t1 - t0
            spent["encode"] += t2 - t1
            spent["replay_live"] += t3 - t2
            spent["replay_read_back"] += t4 - t3
        assert live.snapshot() == committed.snapshot()
        for stage in stages:
            best[stage] = min(best[stage], spent[stage] * 1e6 / members)
        best["stages"] = min(best["stages"], sum(spent.values()) * 1e6 / members)
        start = time.thread_time()
        world._send(requests)
        best["shard"] = min(best["shard"], (time.thread_time() - start) * 1e6 / members)
        world.run(1000)
        assert shard.replay_matches()
    return {k: round(v, 2) for k, v in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", default=None, help="cProfile the whole path into this file")
    parser.add_argument("--joins", action="store_true", help="measure a mass join's stages instead (see measure_joins)")
    args = parser.parse_args()
    if args.joins:
        joins = {"members": args.members, "partitions": args.partitions}
        joins["us_per_join"] = measure_joins(args.members, args.partitions, args.rounds)  # type: ignore[assignment]
        print(json.dumps(joins, indent=2))
        return
    start = time.perf_counter()
    world = World(args.members, args.partitions)
    built_s = time.perf_counter() - start
    result: dict[str, Any] = {"members": args.members, "partitions": args.partitions, "built_s": round(built_s, 1)}
    result["us_per_heartbeat"] = measure(world, args.rounds)
    if args.profile:
        frames = world.frames()
        conns = world.connections(len(frames))
        for conn, frame in zip(conns, frames, strict=True):
            conn._answer_at_once(frame)
        with cProfile.Profile() as profile:
            for _ in range(args.rounds):
                for conn, frame in zip(conns, frames, strict=True):
                    conn._answer_at_once(frame)
        profile.dump_stats(args.profile)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
