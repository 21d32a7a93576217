"""Failover of a graceful stop beside the cluster's own rebalance (issue #26, item 5).

One local broker for both figures of a run:

- the anchor: a bare consumer group of the same shape as placement (two plain librdkafka
  consumers, ``roundrobin``, the drill's session timeout and heartbeat, one 12-partition topic);
  one consumer closes (a LeaveGroup), and the time until the other is assigned every partition is
  what the cluster itself needs to move a leaving member's partitions;
- ``groupcoord drill --signal TERM`` (or KILL) against that broker: three serve processes under
  client load, each fault a random process stopped and restarted, recovery the time until every
  group had a commit acknowledged again.

The run is appended to ``bench/results/failover.json`` (``--name``), with the command and both figures.

    python bench/failover_bench.py --faults 12 --name term_handover
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import groupcoord
from groupcoord.cli.drill import serve_lines
from groupcoord.local_broker import LocalBroker, free_port

RESULTS = Path(__file__).parent / "results" / "failover.json"
PARTITIONS = 12


def _consumer(bootstrap: str, group: str, session_ms: int, assigned: dict[str, Any]) -> Consumer:
    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned["now"] = {tp.partition for tp in partitions}
        assigned["at"] = time.monotonic()

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": "roundrobin",
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": max(100, session_ms // 10),
            "max.poll.interval.ms": session_ms,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    consumer.subscribe(["anchor"], on_assign=on_assign)
    return consumer


def _poll_until(consumers: list[Consumer], done: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if done():
            return True
    return False


def bare_rebalance(bootstrap: str, session_ms: int, rounds: int) -> list[float]:
    """Seconds from one of two consumers closing to the other holding every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("anchor", PARTITIONS, 1)])["anchor"].result(30)
    times: list[float] = []
    stay: dict[str, Any] = {"now": set()}
    survivor = _consumer(bootstrap, "anchor-group", session_ms, stay)
    _poll_until([survivor], lambda: len(stay["now"]) == PARTITIONS, 60)
    for i in range(rounds):
        leave: dict[str, Any] = {"now": set()}
        leaver = _consumer(bootstrap, "anchor-group", session_ms, leave)

        def split_done(leave: dict[str, Any] = leave) -> bool:
            return bool(leave["now"]) and len(stay["now"]) + len(leave["now"]) == PARTITIONS

        split = _poll_until([survivor, leaver], split_done, 60)
        if not split:
            leaver.close()
            continue
        # Let the group settle so the leave does not fall into a rebalance.
        _poll_until([survivor, leaver], lambda: False, 2 * session_ms / 10000)
        stay["now"] = set()
        closing = threading.Thread(target=leaver.close)
        started = time.monotonic()
        closing.start()
        if _poll_until([survivor], lambda: len(stay["now"]) == PARTITIONS, 60):
            times.append(round(stay["at"] - started, 3))
        closing.join()
        print(f"bare rebalance {i + 1}: {times[-1] if times else None}s", file=sys.stderr, flush=True)
    survivor.close()
    return times


# A graceful stop's steps, from the serve processes' own log lines (groupcoord/coordinator/server.py,
# runtime/placement.py): the stopping process got the signal, named successors, left the placement
# group; a survivor took shards over ahead of the rebalance, saw the rebalance, was assigned
# shards by it, loaded a shard.
_STEPS = {
    "stopping": re.compile(r"^stopping: handing the shards over"),
    "handed_over": re.compile(r"^placement: shards handed over ahead of the rebalance"),
    "left": re.compile(r"^placement left"),
}
_SURVIVOR_STEPS = {
    "taken_over": re.compile(r"^placement: taking over shards"),
    "rebalance_seen": re.compile(r"^placement rebalance"),
    "assigned": re.compile(r"owns shards \[[0-9, ]*\] \(assigned \[[0-9]"),
    "loaded": re.compile(r"^shard \d+ loaded in "),
}


def timeline(workdir: Path) -> dict[str, Any]:
    """Median seconds of each step of the graceful stops in a drill's logs, after the stopping
    process's first line of its stop ("stopping", or where that line is not written, "left")."""
    logs = {path.name: serve_lines(path) for path in sorted(workdir.glob("serve*.log"))}
    stops: list[dict[str, float]] = []
    for name, lines in logs.items():
        for i, (ts, msg) in enumerate(lines):
            if not _STEPS["left"].search(msg):
                continue
            steps = {"left": ts}
            for earlier, text in reversed(lines[max(0, i - 20) : i]):
                for step in ("stopping", "handed_over"):
                    if step not in steps and _STEPS[step].search(text) and ts - earlier < 30:
                        steps[step] = earlier
            start = steps.get("stopping", ts)
            for other, found in logs.items():
                if other == name:
                    continue
                for t, text in found:
                    for step, pattern in _SURVIVOR_STEPS.items():
                        if start <= t < start + 30 and pattern.search(text):
                            steps[step] = min(steps.get(step, t), t)
            if "assigned" in steps:  # not the drill's own teardown, which stops every process
                stops.append({k: round(v - start, 3) for k, v in steps.items()})
    keys = ["stopping", "handed_over", "left", *_SURVIVOR_STEPS]
    return {
        "stops": len(stops),
        "median_s_after_stop_began": {
            k: round(statistics.median(v), 3) for k in keys if (v := [s[k] for s in stops if k in s])
        },
        "each": stops,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", type=int, default=12)
    parser.add_argument("--kill-every", type=float, default=15)
    parser.add_argument("--signal", default="TERM")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--anchor-rounds", type=int, default=5)
    parser.add_argument("--name", required=True, help="the run's name in the results file")
    parser.add_argument("--code", default="", help="what code ran (branch and commit)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--timeline-only", type=Path, help="print the timeline of a drill's log directory, and exit")
    args = parser.parse_args()
    if args.timeline_only is not None:
        print(json.dumps(timeline(args.timeline_only)["median_s_after_stop_began"]))
        return
    broker = LocalBroker(port=free_port()).start()
    try:
        anchor = bare_rebalance(broker.bootstrap, args.session_timeout_ms, args.anchor_rounds)
        command = [
            "groupcoord",
            "drill",
            "--processes",
            "3",
            "--faults",
            str(args.faults),
            "--kill-every",
            str(args.kill_every),
            "--seed",
            str(args.seed),
            "--signal",
            args.signal,
            "--session-timeout-ms",
            str(args.session_timeout_ms),
            "--json",
        ]
        bin_dir = Path(sys.executable).parent
        # From the directory of the code this bench imported: the drill starts its serve processes
        # with ``python -m``, which imports from the working directory first.
        done = subprocess.run(
            [str(bin_dir / command[0]), *command[1:], "-b", broker.bootstrap],
            capture_output=True,
            text=True,
            cwd=Path(groupcoord.__file__).parents[1],
        )
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            print(done.stdout[-2000:], done.stderr[-4000:], file=sys.stderr)
            raise
    finally:
        broker.stop()
    found = re.search(r"logs of the processes: (\S+)", done.stderr)
    steps = timeline(Path(found.group(1))) if found else None
    run = {
        "name": args.name,
        "code": args.code,
        "command": " ".join(command) + " -b <local broker of this run>",
        "bench": "python bench/failover_bench.py " + " ".join(sys.argv[1:]),
        "load_average": Path("/proc/loadavg").read_text().split()[:3],
        "anchor_bare_rebalance_s": {
            "what": "two plain librdkafka consumers (roundrobin, the drill's session timeout and heartbeat) on the "
            "same broker: one closes, seconds until the other holds all 12 partitions",
            "each": anchor,
            "median": statistics.median(anchor) if anchor else None,
        },
        "graceful_stop_timeline": steps,
        "report": report,
    }
    results = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    results["runs"] = [r for r in results["runs"] if r.get("name") != args.name] + [run]
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    keys = (
        "recovery_s_p50",
        "recovery_s_p99",
        "recovery_s_max",
        "owner_recovery_s_p50",
        "owner_recovery_s_p99",
        "longest_gap_s_p50",
        "longest_gap_s_p99",
        "longest_gap_s_max",
    )
    summary = {k: report.get(k) for k in keys}
    print(json.dumps({"anchor_median_s": run["anchor_bare_rebalance_s"]["median"], **summary}))
    if steps is not None:
        print(json.dumps(steps["median_s_after_stop_began"]))


if __name__ == "__main__":
    main()
