"""Memory held across reloads of a shard: what ``many_groups_bench.py --reload-check`` runs in
a fresh process, with the code of the checkout on its PYTHONPATH (hence a script of its own,
importing nothing of the bench, whose helpers put this checkout first on the path).

    python bench/reload_memory.py BOOTSTRAP LOG_TOPIC

Prints one JSON line: RSS loaded, after each reload, after the unload and after a full collection.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from pathlib import Path
from typing import Any

import groupcoord
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.runtime.log import LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def child_reloads(bootstrap: str, log_topic: str, reloads: int = 3) -> dict[str, Any]:
    """Memory held across reloads: a runtime in this (fresh) process loads the shard, reloads
    it ``reloads`` times (each load builds a new state and lets the old one go) and unloads it;
    RSS after each step. A state kept frozen once let go (``runtime/collector.py``) would show as
    RSS growing by a loaded shard's size per reload."""
    config = {"bootstrap.servers": bootstrap}
    runtime = CoordinatorRuntime(
        config, LogTopicSpec(name=log_topic, partitions=1), GroupCoordinatorShard(), owner_id="bench-reloads"
    )
    await runtime.start(partitions=[])
    await asyncio.sleep(1.0)
    rss = {"empty": rss_bytes()}
    shard = runtime.load_shard(0)
    await runtime.wait_loaded(900)
    rss["loaded"] = rss_bytes()
    for i in range(reloads):
        shard.reload("bench")
        await runtime.wait_loaded(900)
        await asyncio.sleep(0.5)
        rss[f"reload_{i + 1}"] = rss_bytes()
    runtime.unload_shard(0)
    await asyncio.sleep(0.5)
    rss["unloaded"] = rss_bytes()
    # What a full collection would free of it (in a process that kept its state frozen: all of it).
    gc.collect()
    rss["unloaded_then_collected"] = rss_bytes()
    await runtime.close()
    return {"code": str(Path(groupcoord.__file__).parents[1]), "rss_bytes": rss}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(child_reloads(sys.argv[1], sys.argv[2]))))
