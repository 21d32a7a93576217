"""The pipeline benchmark, run tiny so it cannot rot: the same steps as the 1M-record run
(coordinator writes the log, raw read, coordinator load, Spark snapshot) and the same check that
the snapshot equals what the loaded coordinator holds. No timing is asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from pyspark.sql import SparkSession

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pipeline_bench.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pipeline_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pipeline_bench_runs_and_both_readers_agree(bootstrap: str, spark: SparkSession) -> None:
    bench = load_bench()
    result = bench.run(bootstrap, "test", records=3000, log_partitions=2, master="local[2]")
    assert result["snapshot_equals_coordinator"] is True
    # 30 commits of 100 partitions by one group over its 10 topics: 1,000 keys, each committed 3 times.
    assert result["log"]["keys"] == 1000
    assert result["spark_snapshot"]["tables"]["offsets"] == 1000
    assert result["raw_consume"]["records"] >= 3000
    assert result["coordinator_load"]["records"] == result["spark_snapshot"]["records"]
    for figure in ("raw_consume", "coordinator_load", "spark_snapshot"):
        assert result[figure]["records_per_s"] > 0
