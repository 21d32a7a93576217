"""Issue #24's scenario with two ``groupcoord serve`` processes and ``kill -9`` of the one owning
the group's shard in the middle of the run: the other takes the shard over (placement), the
application recovers from the failed transaction (abort, or a new producer) and rewinds to the
committed offsets, and the committed output still holds every input record exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.coordinator.service.partitioning import partition_for
from tests.ha.sidecars import Sidecar, wait_for
from tests.topics import ensure_topic
from tests.txn.eos import check_outcome, fill_input, run_scenario

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LOG_PARTITIONS = 2
PARTITIONS = 2
RECORDS = 30


def test_kill_9_of_the_owner_mid_run_keeps_exactly_once(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    source, sink, group = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-g"
    ensure_topic(bootstrap, source, PARTITIONS)
    ensure_topic(bootstrap, sink, 1)
    inputs = fill_input(bootstrap, source, PARTITIONS, RECORDS)
    sidecars = [
        Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", partitions=LOG_PARTITIONS).spawn() for i in range(2)
    ]
    try:
        for s in sidecars:
            s.wait_listening()
        shard = partition_for(group, LOG_PARTITIONS)
        wait_for(lambda: any(shard in s.owned() for s in sidecars), 60, "the group's shard owned")
        killed: list[Sidecar] = []

        def kill_owner(transactions: int) -> None:
            if transactions == 5 and not killed:
                owner = next(s for s in sidecars if shard in s.owned())
                owner.kill9()
                killed.append(owner)

        both = ",".join(s.address for s in sidecars)
        stats = run_scenario(
            both,
            source,
            sink,
            group,
            f"{unique_name}-tx",
            RECORDS,
            after_commit=kill_owner,
            survive_failures=True,
            # A call that outlives this failed (a dead address, see run_scenario): the scenario
            # recovers from it as from any failure, so it need not wait 30 s for each of them.
            call_timeout=8,
        )
        assert killed and stats["aborted"] == 1 and stats["fenced"] == 1, stats
        survivor = next(s for s in sidecars if s not in killed)
        check_outcome(bootstrap, survivor.address, inputs, source, sink, group)
    finally:
        for s in sidecars:
            s.stop()
