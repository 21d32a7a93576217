"""The few Kafka requests the sidecar sends on a client's behalf for transactional offsets.

A blocking-free, one-request-at-a-time connection on the project's codec, plus record batch v2
framing: one transactional batch out (kafka-python's builder, for its CRC-32C) and the headers of
the batches read back, control batches (COMMIT/ABORT markers) included. librdkafka's consumer
hides control batches, so this is the only reader that can see a transaction's outcome.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder

CLIENT_ID = "groupcoord-txn"


# --- record batches --------------------------------------------------------------------------

_TRANSACTIONAL = 0x10
_CONTROL = 0x20
# base offset (8), batch length (4), then from the leader epoch: leader epoch (4), magic (1),
# crc (4), attributes (2), last offset delta (4), base timestamp (8), max timestamp (8),
# producer id (8), producer epoch (2), base sequence (4), record count (4).
_HEAD = struct.Struct(">qi")
_BODY = struct.Struct(">ibIhiqqqhii")
_BATCH_OVERHEAD = 61
COMMIT_MARKER = 1
ABORT_MARKER = 0


def transactional_batch(
    key: bytes, value: bytes, producer_id: int, producer_epoch: int, sequence: int, now_ms: int | None = None
) -> bytes:
    """One uncompressed transactional record batch of one record."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=sequence,
        batch_size=len(key) + len(value) + 1024,
    )
    builder.append(0, int(time.time() * 1000) if now_ms is None else now_ms, key, value, [])
    return bytes(builder.build())


@dataclass(frozen=True, slots=True)
class BatchHead:
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    # For a control batch: COMMIT_MARKER or ABORT_MARKER; None for data.
    marker: int | None


def batch_heads(data: bytes | None) -> list[BatchHead]:
    """The complete batches of a Fetch answer's records (a partial one at the end is left out).
    Only a control batch's record is looked into: its key is version (int16) and type (int16)."""
    out: list[BatchHead] = []
    if not data:
        return out
    view = memoryview(data)
    pos = 0
    while pos + _BATCH_OVERHEAD <= len(view):
        base_offset, length = _HEAD.unpack_from(view, pos)
        end = pos + 12 + length
        if end > len(view) or length < _BATCH_OVERHEAD - 12:
            break
        (_, magic, _, attributes, last_delta, _, _, producer_id, epoch, _, count) = _BODY.unpack_from(view, pos + 12)
        marker = None
        if magic == 2 and attributes & _CONTROL and count > 0:
            marker = _control_type(view[pos + _BATCH_OVERHEAD : end])
        out.append(
            BatchHead(
                base_offset, base_offset + last_delta, producer_id, epoch, bool(attributes & _TRANSACTIONAL), marker
            )
        )
        pos = end
    return out


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _control_type(record: memoryview) -> int | None:
    """The type of a control record (its key: version int16, type int16)."""
    try:
        _, pos = _varint(record, 0)  # length
        pos += 1  # attributes
        _, pos = _varint(record, pos)  # timestamp delta
        _, pos = _varint(record, pos)  # offset delta
        key_length, pos = _varint(record, pos)
        if key_length < 4:
            return None
        return int(struct.unpack_from(">h", record, pos + 2)[0])
    except (IndexError, struct.error):
        return None
