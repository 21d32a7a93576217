"""The runtime's log rules, applied per log partition inside Spark (``applyInPandas``).

Fencing and atomic batches are sequential within a partition, so each log partition is one pandas
group walked in offset order. The walk *is* the runtime's ``LogReplayer`` (the same code a
coordinator runs at load time): it is fed stand-in records that carry only what the rules read
(type, shard epoch, batch markers, ShardEpoch/BatchAbort values), and a recording target notes
which offsets it applies. Every record gets a status:

- ``applied``: part of the state a coordinator that loaded this log would serve;
- ``fenced``: written under a shard epoch older than one already seen (a zombie owner's write);
- ``aborted``: part of an atomic batch that was cut short (named by a BatchAbort, or cut by a
  later batch start);
- ``pending``: part of a batch still open at the end of the log (a loader would abort it);
- ``runtime``: a ShardEpoch, BatchAbort or LogSkip record (rules, not state);
- ``unreadable``: could not be decoded (a coordinator would refuse to load this shard);
- ``skipped``: could not be decoded, and an operator's LogSkip record names it (``groupcoord log
  skip``): a coordinator loads the shard without it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import BatchAbortValue, LogSkipValue, ShardEpochValue

STATUS_COLUMNS = [
    "partition",
    "offset",
    "record_type_id",
    "shard_epoch",
    "batch_index",
    "batch_count",
    "tombstone",
    "se_epoch",
    "abort_first",
    "abort_last",
    "skip_offset",
    "error",
]
STATUS_SCHEMA = "partition int, offset long, status string, batch_start long"

_RUNTIME = {int(RecordType.SHARD_EPOCH), int(RecordType.BATCH_ABORT), int(RecordType.LOG_SKIP)}


class _Recorder:
    def __init__(self) -> None:
        self.applied: list[int] = []

    def replay(self, record: CoordinatorRecord) -> None:
        self.applied.append(record.key)

    def snapshot(self) -> Any:
        return None


def _int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def statuses(pdf: pd.DataFrame) -> pd.DataFrame:
    """Status of every record of one log partition (rows in any order)."""
    pdf = pdf.sort_values("offset")
    recorder = _Recorder()
    replayer = LogReplayer("log", 0, [recorder])
    status: dict[int, str] = {}
    batch_start: dict[int, int] = {}
    current_start = -1
    for row in pdf.itertuples(index=False):
        offset = int(row.offset)
        if row.error is not None and not pd.isna(row.error):
            status[offset] = "unreadable"
            continue
        type_id = int(row.record_type_id)
        index, count = _int(row.batch_index), _int(row.batch_count)
        epoch = _int(row.shard_epoch) or 0
        headers = make_headers(epoch, index or 0, count or 1)
        value: Any = None
        if type_id == int(RecordType.SHARD_EPOCH) and not row.tombstone:
            value = ShardEpochValue(int(row.se_epoch), "", 0)
        elif type_id == int(RecordType.BATCH_ABORT) and not row.tombstone:
            value = BatchAbortValue(int(row.abort_first), int(row.abort_last), epoch)
        elif type_id == int(RecordType.LOG_SKIP) and not row.tombstone:
            # The replayer reads the decision's offset; who and why matter to no rule.
            skipped_at = int(row.skip_offset)
            value = LogSkipValue(skipped_at, "", 0, "")
            if status.get(skipped_at) == "unreadable":
                status[skipped_at] = "skipped"
        elif not row.tombstone:
            value = True  # only "is it a tombstone" matters to the rules
        skipped = replayer.skipped
        before = len(recorder.applied)
        replayer.feed(offset, None, None, headers, CoordinatorRecord(RecordType(type_id), offset, value))
        if count is None or index == 0:
            current_start = offset
        batch_start[offset] = offset if count is None else current_start
        if type_id in _RUNTIME:
            status[offset] = "runtime"
        elif replayer.skipped > skipped:
            status[offset] = "fenced"
        for applied in recorder.applied[before:]:
            status[applied] = "applied"
    open_batch = replayer.open_batch()
    for offset in pdf["offset"]:
        o = int(offset)
        if o not in status:
            status[o] = "pending" if open_batch is not None and open_batch[0] <= o <= open_batch[1] else "aborted"
    partition = int(pdf["partition"].iloc[0]) if len(pdf) else 0
    offsets = [int(o) for o in pdf["offset"]]
    return pd.DataFrame(
        {
            "partition": [partition] * len(offsets),
            "offset": offsets,
            "status": [status[o] for o in offsets],
            "batch_start": [batch_start.get(o, o) for o in offsets],
        }
    )


def statuses_iter(key: Any, pdf: pd.DataFrame) -> pd.DataFrame:
    return statuses(pdf)
