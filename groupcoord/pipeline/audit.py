"""Invariant checks over the whole log, one log partition per pandas group (sequential rules).

Checks (DESIGN.md), each violation named by check, group, log partition and offset:

- ``decode``: every record decodes;
- ``epoch-backwards``: a group's epoch (consumer group epoch, classic generation) never goes back
  while the group exists (a tombstone ends the group, so a re-created group starts over);
- ``partition-two-members``: after every atomic batch, no target assignment gives one partition
  to two members of a group;
- ``member-epoch-above-group``: after every atomic batch, no member's epoch exceeds its group's epoch;
- ``built-on-fenced``: no applied group epoch follows from an epoch only a fenced owner (a zombie,
  see ``groupcoord.pipeline.replay``) wrote: state that built on a record replay ignores.

Only records a loading coordinator applies count for the state checks; fenced and aborted records
are legitimately in the log and never applied.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from groupcoord.records import RecordType

AUDIT_COLUMNS = [
    "partition",
    "offset",
    "status",
    "batch_start",
    "record_type_id",
    "tombstone",
    "group_id",
    "member_id",
    "cg_epoch",
    "generation",
    "member_epoch",
    "target",
    "error",
]
VIOLATION_SCHEMA = "check string, group_id string, partition int, offset long, detail string"

_CG = int(RecordType.CONSUMER_GROUP_METADATA)
_CLASSIC = int(RecordType.GROUP_METADATA)
_TARGET = int(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER)
_CURRENT = int(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str) or not hasattr(value, "__len__"):
        return bool(pd.isna(value))
    return False  # a list or numpy array (how pandas hands Spark arrays over)


class _PartitionAudit:
    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.out: list[tuple[str, str | None, int, int, str]] = []
        self.group_epoch: dict[str, int] = {}
        self.group_epoch_at: dict[str, int] = {}
        self.generation: dict[str, int] = {}
        self.fenced_epochs: dict[str, dict[int, int]] = {}
        # group -> member -> (partitions "topic_id:p", offset of the record that set them)
        self.target: dict[str, dict[str, tuple[frozenset[str], int]]] = {}
        self.member_epoch: dict[str, dict[str, tuple[int, int]]] = {}
        self.touched: set[str] = set()
        self.reported: set[tuple[str, str, str, str]] = set()

    def violation(self, check: str, group: str | None, offset: int, detail: str) -> None:
        self.out.append((check, group, self.partition, offset, detail))

    def record(self, row: Any) -> None:
        offset = int(row.offset)
        if row.status == "unreadable":
            self.violation("decode", None, offset, str(row.error))
            return
        if row.status == "skipped":
            return  # unreadable, and an operator's LogSkip says loads pass over it: decided
        type_id = int(row.record_type_id)
        group = None if _missing(row.group_id) else str(row.group_id)
        if group is None:
            return
        if row.status == "fenced" and type_id == _CG and not row.tombstone:
            self.fenced_epochs.setdefault(group, {})[int(row.cg_epoch)] = offset
            return
        if row.status != "applied":
            return
        if type_id == _CG:
            self._group_epoch(group, row, offset)
        elif type_id == _CLASSIC:
            if row.tombstone:
                self.generation.pop(group, None)
            else:
                new, old = int(row.generation), self.generation.get(group)
                if old is not None and new < old:
                    self.violation("epoch-backwards", group, offset, f"classic generation {old} -> {new}")
                self.generation[group] = new
        elif type_id == _TARGET:
            members = self.target.setdefault(group, {})
            if row.tombstone:
                members.pop(str(row.member_id), None)
            else:
                members[str(row.member_id)] = (frozenset(row.target if not _missing(row.target) else ()), offset)
            self.touched.add(group)
        elif type_id == _CURRENT:
            epochs = self.member_epoch.setdefault(group, {})
            if row.tombstone:
                epochs.pop(str(row.member_id), None)
            else:
                epochs[str(row.member_id)] = (int(row.member_epoch), offset)
            self.touched.add(group)

    def _group_epoch(self, group: str, row: Any, offset: int) -> None:
        if row.tombstone:
            self.group_epoch.pop(group, None)
            self.target.pop(group, None)
            self.member_epoch.pop(group, None)
            return
        new, old = int(row.cg_epoch), self.group_epoch.get(group)
        if old is not None and new < old:
            self.violation("epoch-backwards", group, offset, f"group epoch {old} -> {new}")
        fenced_at = self.fenced_epochs.get(group, {}).get(new - 1)
        if fenced_at is not None and (old is None or old < new - 1):
            self.violation(
                "built-on-fenced",
                group,
                offset,
                f"group epoch {new} follows epoch {new - 1}, written only by a fenced owner at offset {fenced_at}",
            )
        self.group_epoch[group] = new
        self.group_epoch_at[group] = offset
        self.touched.add(group)

    def end_of_batch(self) -> None:
        for group in sorted(self.touched):
            owners: dict[str, tuple[str, int]] = {}
            for member, (partitions, offset) in sorted(self.target.get(group, {}).items()):
                for tp in sorted(partitions):
                    if tp in owners:
                        other, other_offset = owners[tp]
                        if (group, tp, other, member) in self.reported:
                            continue
                        self.reported.add((group, tp, other, member))
                        at = max(offset, other_offset)
                        self.violation(
                            "partition-two-members",
                            group,
                            at,
                            f"partition {tp} is in the target assignment of {other} and {member}",
                        )
                    else:
                        owners[tp] = (member, offset)
            epoch = self.group_epoch.get(group)
            if epoch is not None:
                for member, (member_epoch, offset) in sorted(self.member_epoch.get(group, {}).items()):
                    if member_epoch > epoch:
                        # Named at the record that made it so: the member's, or a group epoch written after it.
                        self.violation(
                            "member-epoch-above-group",
                            group,
                            max(offset, self.group_epoch_at.get(group, offset)),
                            f"member {member} at epoch {member_epoch} above group epoch {epoch}",
                        )
                        # Reported once: the member keeps that epoch until a later record.
                        self.member_epoch[group][member] = (-1, offset)
        self.touched.clear()


def audit_partition(pdf: pd.DataFrame) -> pd.DataFrame:
    pdf = pdf.sort_values("offset")
    audit = _PartitionAudit(int(pdf["partition"].iloc[0]) if len(pdf) else 0)
    unit: int | None = None
    for row in pdf.itertuples(index=False):
        start = int(row.batch_start)
        if row.status == "applied" and unit is not None and start != unit:
            audit.end_of_batch()
        if row.status == "applied":
            unit = start
        audit.record(row)
    audit.end_of_batch()
    columns = ["check", "group_id", "partition", "offset", "detail"]
    return pd.DataFrame(audit.out, columns=columns).astype({"partition": "int32", "offset": "int64"})


def audit_iter(key: Any, pdf: pd.DataFrame) -> pd.DataFrame:
    return audit_partition(pdf)
