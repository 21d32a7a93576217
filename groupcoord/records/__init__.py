"""Coordinator log records: types, Avro schemas and key/value codecs (shared by runtime, cli, pipeline)."""

from groupcoord.records.codec import (
    CoordinatorRecord,
    RecordCodec,
    RecordDecodeError,
    decode,
    encode,
    encode_key,
    encode_value,
)
from groupcoord.records.definitions import RecordType

__all__ = [
    "CoordinatorRecord",
    "RecordCodec",
    "RecordDecodeError",
    "RecordType",
    "decode",
    "encode",
    "encode_key",
    "encode_value",
]
