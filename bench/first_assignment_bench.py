"""Time from subscribe to first assignment on a topic created a moment before, through the sidecar.

    python bench/first_assignment_bench.py [--runs 5] [--bootstrap HOST:PORT]

A librdkafka consumer (``group.protocol=consumer``) subscribes to a topic created just before;
the figure is the time until its first non-empty assignment. The sidecar runs with its default
``metadata_refresh_interval_ms`` (10 s): without an on-demand refresh the assignment waits for
the next periodic one. Beside it, the same consumer's time to first assignment on a topic the
sidecar already knows (the floor: heartbeats and one assignor run). Writes bench/results/first_assignment.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from groupcoord.local_broker import LocalBroker, free_port  # noqa: E402
from tests.clients.support import create_topic  # noqa: E402
from tests.integration.serve_process import ServeProcess  # noqa: E402


def first_assignment_s(sidecar: str, topic: str, timeout: float = 30.0) -> float:
    assigned: list[Any] = []
    consumer = Consumer(
        {
            "bootstrap.servers": sidecar,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "group.protocol": "consumer",
            "log_level": 3,
        }
    )
    started = time.perf_counter()
    consumer.subscribe([topic], on_assign=lambda c, ps: assigned.extend(ps))
    try:
        while not assigned:
            consumer.poll(0.05)
            if time.perf_counter() - started > timeout:
                return float("nan")
        return time.perf_counter() - started
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "first_assignment.json"))
    args = parser.parse_args()
    broker = None if args.bootstrap else LocalBroker(port=free_port()).__enter__()
    bootstrap = args.bootstrap or broker.bootstrap  # type: ignore[union-attr]
    serve = ServeProcess(bootstrap, free_port(), f"bench-log-{uuid.uuid4().hex[:8]}").start()
    try:
        known = f"bench-known-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, known, 2)
        time.sleep(11)  # let the periodic refresh learn about it
        floor = [first_assignment_s(serve.bootstrap, known) for _ in range(args.runs)]
        new = []
        for _ in range(args.runs):
            topic = f"bench-new-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, 2)
            new.append(first_assignment_s(serve.bootstrap, topic))
    finally:
        serve.stop()
        if broker is not None:
            broker.__exit__(None, None, None)
    out = {
        "new_topic_first_assignment_s": {"median": statistics.median(new), "runs": new},
        "known_topic_first_assignment_s": {"median": statistics.median(floor), "runs": floor},
        "metadata_refresh_interval_ms": 10_000,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
