"""Each benchmark run at its smallest size, so a bench cannot rot unnoticed.

Only the shape of the JSON it writes is checked: timings belong in bench/results, never in tests.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serve_process import PLACEMENT_DEFAULTS
from tests.processes import run

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def run_bench(script: str, out: Path, *args: str, out_flag: str = "--out") -> dict[str, Any]:
    done = run(
        [sys.executable, str(ROOT / "bench" / script), *args, out_flag, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**PLACEMENT_DEFAULTS, **os.environ},  # inherited by the serve processes a bench starts
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_gateway_bench(tmp_path: Path) -> None:
    out = tmp_path / "gateway.json"
    result = run_bench(
        "gateway_bench.py", out, "--records", "300", "--rounds", "1", "--round-trips", "20", out_flag="--output"
    )
    loops = result["params"]["event_loops"]
    assert "asyncio" in loops
    for kind in ("produce", "fetch"):
        sides = result[kind]
        assert set(sides) == {"direct", "bare_relay"} | {f"gateway_{loop}" for loop in loops}
        for side in sides.values():
            assert side["records_per_s_median"] > 0 and side["over_direct"] > 0
            assert len(side["rounds"]) == 1
    for name in ("list_offsets_v1", "metadata_v9"):
        entry = result["request_latency"][name]
        assert entry["direct"]["p99_us"] >= entry["direct"]["p50_us"] > 0
        for via in [*loops, "bare_relay"]:
            assert set(entry[f"added_{via}"]) == {"p50_us", "p99_us", "mean_us"}


def test_offsets_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench("offsets_bench.py", tmp_path / "offsets.json", "--seconds", "0.3", "--bootstrap", bootstrap)
    assert result["raw"]["produce_consume_round_trip_ms"]["p50"] > 0
    assert [r["partitions_per_request"] for r in result["groupcoord"]] == [1, 100]
    # Each commit shape beside the raw cluster's figure for the same records, from the same run.
    assert [r["records_per_request"] for r in result["raw"]["commit_equivalent"]] == [1, 100]
    for r in [*result["groupcoord"], *result["raw"]["commit_equivalent"]]:
        assert r.get("offsets_per_s", r.get("records_per_s", 0)) > 0
        assert r["latency_ms"]["p99"] >= r["latency_ms"]["p50"] > 0
    for r in result["groupcoord"]:
        assert r["x_raw"] > 0 and r["event_loop"] in ("uvloop", "asyncio")
        # The serve-side CPU per acknowledged offset, to compare versions by.
        assert r["serve_cpu_us_per_offset"]["process"] >= r["serve_cpu_us_per_offset"]["loop_thread"] > 0


def test_large_group_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "large_group_bench.py",
        tmp_path / "large_group.json",
        *("--members", "12", "--partitions", "24", "--steady-seconds", "2", "--restart-batch", "4"),
        # A 1 s heartbeat interval: each phase converges in a few heartbeats instead of 5 s ones.
        *("--heartbeat-interval-ms", "1000", "--timeout", "120", "--bootstrap", bootstrap),
    )
    assert result["raw"]["produce_consume_round_trip_ms"]["p50"] > 0
    # The first interval after convergence apart (one heartbeat interval), then the steady state.
    for phase in ("mass_join", "steady_first_interval", "steady", "rolling_restart"):
        figures = result[phase]
        assert figures["heartbeats"] > 0
        assert figures["latency_ms"]["p99"] >= figures["latency_ms"]["p50"] > 0
        assert figures["errors"] == {}
        # The collector's pauses that held the serve process's loop in the phase (bench/gc_pauses.py).
        pauses = figures["gc_pauses"]
        assert pauses["collections"] == sum(pauses[f"gen{g}"]["count"] for g in (0, 1, 2))
    assert result["serve_gc_until_converged"]["collections"] > 0
    assert result["mass_join"]["converge_s"] > 0
    assert result["rolling_restart"]["converge_s"] >= result["rolling_restart"]["all_restarted_s"] > 0


def test_txn_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "txn_bench.py", tmp_path / "txn.json", "--transactions", "3", "--commits", "8", "--bootstrap", bootstrap
    )
    assert result["raw"]["transaction"]["transaction_ms"]["p50"] > 0
    ours = result["groupcoord"]
    for figure in (
        ours["plain_commit"]["commit_ms"],
        ours["txn_offset_commit"]["txn_offset_commit_ms"],
        ours["txn_offset_commit"]["commit_to_visible_ms"],
        ours["open_transaction"]["plain_commit_ms_with_open_transaction"],
        ours["open_transaction"]["plain_commit_ms_without_open_transaction"],
    ):
        assert figure["p99"] >= figure["p50"] > 0


def test_assignor_bench(tmp_path: Path) -> None:
    result = run_bench(
        "assignor_bench.py",
        tmp_path / "assignors.json",
        *("--rounds", "1", "--members", "40", "--topics", "10", "--partitions", "6", "--heartbeat-members", "20"),
    )
    shapes = {(s["subscription"], s["racks"]) for s in result["shapes"]}
    assert shapes == {
        (sub, racks) for sub in ("homogeneous", "heterogeneous") for racks in ("none", "members", "replicas")
    }
    for s in result["shapes"]:
        for name in ("uniform", "range"):
            assert set(s[name]) == {"assignor_full", "assignor_sticky_join"}
        target = s["uniform_target_assignment"]
        for change in ("one_member_joins", "one_member_leaves"):
            assert set(target[change]) == {"full", "incremental", "records_written"}
            assert target[change]["incremental"]["cpu_ms_median"] >= 0
    assert result["anchor_one_dict_entry_per_partition"]["cpu_ms_median"] >= 0


def test_many_groups_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "many_groups_bench.py", tmp_path / "many.json",
        "--groups", "50", "--rounds", "2", "--quiet-seconds", "0.3", "--bootstrap", bootstrap,
    )  # fmt: skip
    assert result["fill"]["direct"]["appended_records"] == 49 * 10
    # One query phase (a fresh serve loading the log) of this checkout.
    [queries] = result["queries_by_tree"]["this"]
    assert queries["list_groups_listed"] >= 50 and queries["describe_groups_described"] == 50
    assert queries["heartbeat_quiet"]["heartbeats"] > 0
    assert queries["rss_bytes_per_group"] > 0 and queries["gc_during_queries"]["max_ms"] >= 0
    # The serve process's event-loop turns of 10 ms or more, per phase (bench/loop_stalls.py).
    stalls = queries["loop_stalls"]
    assert set(stalls) == {"quiet", "list", "describe", "scrapes"}
    assert all(s["max_ms"] >= 0 and s["max_cpu_ms"] >= 0 and s["stalls"] >= 0 for s in stalls.values())
    assert result["load"]["records"] >= 500 and result["load"]["load_over_raw_read"] > 0
    # Each round's load and bare read, both in fresh processes, the bare read first, then second.
    rounds = result["load"]["rounds"]
    assert [r["order"] for r in rounds] == ["raw-load", "load-raw"]
    for r in rounds:
        assert r["raw_read"]["records"] >= 500 and r["failover_load"]["records"] >= 500
        assert r["raw_read"]["cpu_seconds"] > 0 and r["failover_load"]["cpu_seconds"] > 0
    assert set(result["memory"]) >= {"bytes_per_committed_offset", "bytes_per_group"}


def test_classic_group_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "classic_group_bench.py",
        tmp_path / "classic_group.json",
        *("--members", "6", "--partitions", "12", "--steady-seconds", "2", "--restarts", "1"),
        # Members learn of a rebalance from their next heartbeat (1 s, not 3), and the first one
        # waits 300 ms for more members (not Kafka's 3 s).
        *("--heartbeat-interval-s", "1", "--initial-rebalance-delay-ms", "300"),
        *("--timeout", "120", "--bootstrap", bootstrap),
    )
    assert result["raw"]["produce_consume_round_trip_ms"]["p50"] > 0
    for protocol in ("eager", "cooperative"):
        assert result[protocol]["mass_join"]["converge_s"] > 0
        steady = result[protocol]["steady"]
        assert steady["heartbeats"] > 0 and steady["errors"] == {}
        assert steady["latency_ms"]["p99"] >= steady["latency_ms"]["p50"] > 0
        assert result[protocol]["restarts"]["count"] == 1


def test_scale_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "scale_bench.py", tmp_path / "scale.json",
        "--processes", "2", "--groups", "2", "--shards", "2", "--seconds", "0.5", "--lone-commits", "5",
        "--bootstrap", bootstrap,
    )  # fmt: skip
    assert [r["processes"] for r in result["groupcoord"]] == [2]
    assert len(result["raw"]) == 1 and result["raw"][0]["records_per_s"] > 0
    for step in result["groupcoord"]:
        assert step["offsets_per_s"] > 0 and step["vs_raw"] > 0
        assert len(step["serve_cpu_s"]) == step["processes"] and step["serve_cpu_us_per_offset"] > 0
        assert sum(step["groups_per_process"]) == 2
        assert step["in_flight"] == 2 * 3  # --in-flight 3 per group
        assert step["latency_one_at_a_time_ms"]["p99"] >= step["latency_one_at_a_time_ms"]["p50"] > 0
        threads = step["serve_thread_cpu_s"]
        assert len(threads) == step["processes"] and all("main" in t for t in threads)
        assert len(step["load_average"]) == 2 and step["client_cpu_us_per_offset"] > 0


def test_share_bench(tmp_path: Path, bootstrap: str) -> None:
    result = run_bench(
        "share_bench.py",
        tmp_path / "share.json",
        *("--records", "2000", "--consumers", "1,2", "--repeats", "2", "--acks", "5", "--timeout", "60"),
        *("--bootstrap", bootstrap),
    )
    # One anchor read before the drains and one after each of them.
    assert result["raw"]["direct_records_per_s"] > 0 and len(result["raw"]["direct"]) == 5
    ours = result["groupcoord"]
    assert ours["through_sidecar"]["records"] == 2000 and ours["through_sidecar"]["over_direct"] > 0
    assert [s["consumers"] for s in ours["share"]] == [1, 2]
    for entry in ours["share"]:
        # (No rate is asserted: a run whose records all come in one poll has none.)
        assert entry["complete"] and entry["records"] == 2000 and entry["over_direct"] >= 0
        assert len(entry["records_per_s_runs"]) == 2 and entry["records_per_s"] == min(entry["records_per_s_runs"])
        assert entry["client_cpu_us_per_record"] > 0
        assert (
            entry["serve_cpu_per_wall_s"] >= 0 and entry["serve_counted"]["groupcoord_share_fetch_requests_total"] > 0
        )
        assert entry["serve_cpu_us_per_record"] >= 0 and entry["records_per_share_fetch"] > 0
        assert 0 < entry["in_flight_window"] <= entry["consumers"] * entry["records_per_share_fetch"]
    assert ours["ack_latency_ms"]["p99"] >= ours["ack_latency_ms"]["p50"] > 0
    assert isinstance(ours["goal_met"], bool)
