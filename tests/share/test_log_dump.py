"""ShareSnapshot (62) and ShareUpdate (63) as ``groupcoord log dump`` shows them: every field, and
each state batch's state by name next to its id."""

from __future__ import annotations

from groupcoord.cli.log import _row
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
)
from tests.groups_config.test_group_config_records import _Message


def _dumped(record: CoordinatorRecord) -> dict[str, object]:
    key, value = encode(record)
    row, decoded = _row(_Message(key, value, make_headers(2, 0, 1)))
    assert decoded is not None and decoded.type == record.type
    return row


def test_log_dump_shows_share_state_records_with_state_names() -> None:
    snapshot = ShareSnapshotValue(1, 3, 10, [ShareStateBatch(10, 11, 2, 1), ShareStateBatch(12, 12, 0, 2)], "abc")
    row = _dumped(CoordinatorRecord(RecordType.SHARE_SNAPSHOT, ShareSnapshotKey("g", "t", 0), snapshot))
    assert row["type"] == "SHARE_SNAPSHOT" and row["key"] == {"group": "g", "topic": "t", "partition": 0}
    assert row["value"] == {
        "snapshot_epoch": 1,
        "state_epoch": 3,
        "start_offset": 10,
        "state_batches": [
            {"first_offset": 10, "last_offset": 11, "delivery_state": 2, "delivery_count": 1, "state": "ACKNOWLEDGED"},
            {"first_offset": 12, "last_offset": 12, "delivery_state": 0, "delivery_count": 2, "state": "AVAILABLE"},
        ],
        "topic_id": "abc",
    }
    update = ShareUpdateValue(1, 13, [ShareStateBatch(13, 13, 4, 5)])
    row = _dumped(CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey("g", "t", 0, 4), update))
    assert row["key"] == {"group": "g", "topic": "t", "partition": 0, "slot": 4}
    assert row["value"] == {
        "snapshot_epoch": 1,
        "start_offset": 13,
        "state_batches": [
            {"first_offset": 13, "last_offset": 13, "delivery_state": 4, "delivery_count": 5, "state": "ARCHIVED"}
        ],
    }
    tombstone = _dumped(CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey("g", "t", 0, 4), None))
    assert tombstone["value"] is None
