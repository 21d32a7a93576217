"""The GROUP_CONFIG record as ``groupcoord log dump`` shows it."""

from __future__ import annotations

from typing import Any

from groupcoord.cli.log import _row
from groupcoord.coordinator.groups import group_config as gc
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.records import RecordType, encode


class _Message:
    def __init__(self, key: bytes, value: bytes | None, headers: Any) -> None:
        self._key, self._value, self._headers = key, value, headers

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Any:
        return self._headers

    def offset(self) -> int:
        return 7


def test_log_dump_shows_group_configs_and_their_tombstone() -> None:
    key, value = encode(gc.config_record("g", {gc.SESSION_TIMEOUT: "20000"}))
    row, record = _row(_Message(key, value, make_headers(3, 0, 1)))
    assert record is not None and record.type == RecordType.GROUP_CONFIG
    assert row["type"] == "GROUP_CONFIG" and row["key"] == {"group": "g"}
    assert row["value"] == {"configs": [{"name": gc.SESSION_TIMEOUT, "value": "20000"}]}
    key, value = encode(gc.config_record("g", {}))
    row, _ = _row(_Message(key, value, make_headers(3, 0, 1)))
    assert row["value"] is None
