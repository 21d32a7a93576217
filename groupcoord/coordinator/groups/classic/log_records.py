"""GroupMetadata records written by other parts of the coordinator (admin deletion, retention)."""

from __future__ import annotations

from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import GroupMetadataKey


def group_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    """Deletes a classic group: replay removes it and compaction drops its record."""
    return CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey(group_id), None)
