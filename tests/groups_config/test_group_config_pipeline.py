"""The GROUP_CONFIG record in the Spark pipeline's rows (its value struct is derived from the schema)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.groups import group_config as gc
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.records import RecordType, encode

pytest.importorskip("pyspark", reason="the pipeline tests need the spark extra: pip install -e '.[spark]'")

from groupcoord.pipeline.rows import COLUMNS, VALUE_TYPE, to_row, value_field  # noqa: E402


def test_pipeline_rows_carry_group_configs() -> None:
    key, value = encode(gc.config_record("g", {gc.HEARTBEAT_INTERVAL: "2000"}))
    row = dict(zip(COLUMNS, to_row(0, 5, 0, key, value, make_headers(1, 0, 1)), strict=True))
    assert (row["record_type"], row["group_id"], row["tombstone"], row["error"]) == ("GROUP_CONFIG", "g", False, None)
    slot = [f.name for f in VALUE_TYPE.fields].index(value_field(RecordType.GROUP_CONFIG))
    assert row["value"][slot] == ([(gc.HEARTBEAT_INTERVAL, "2000")],)
