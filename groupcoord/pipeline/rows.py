"""The row shape of the ``groupcoord`` data source, derived from the project's own record definitions.

Schema choice: common columns are typed top-level columns (where the record is, its shard epoch
and batch markers, its type, and the key fields every job joins or groups on: ``group_id``,
``member_id``, ``topic``, ``topic_partition``, ``regex``, and for the transactional records
``producer_id`` and ``txn_offset``, for ShareUpdate its ``slot``); the value is one struct column
``value`` with one nullable field per record type (``value.offset_commit.offset``,
``value.consumer_group_metadata.epoch``, ...), exactly one of them set (none for a tombstone).
Every field stays typed and queryable in SQL without JSON parsing, and the structs are generated
from the newest Avro schema of each type, so a schema that gains a field (records/README.md)
gains a column here without a code change.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from groupcoord.coordinator.runtime.headers import parse_headers
from groupcoord.records import RecordDecodeError, RecordType
from groupcoord.records.avro import to_avro
from groupcoord.records.codec import DEFAULT_CODEC, RecordCodec
from groupcoord.records.definitions import DEFINITIONS, RecordDef

_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(),
    "int": IntegerType(),
    "long": LongType(),
    "bytes": BinaryType(),
    "boolean": BooleanType(),
    "float": FloatType(),
    "double": DoubleType(),
}

Convert = Callable[[Any], Any]


def value_field(record_type: RecordType) -> str:
    """Name of the ``value`` struct field holding this record type (``offset_commit``, ...)."""
    return record_type.name.lower()


class _AvroToSpark:
    """Spark types and value converters from Avro schemas (named types resolved as Avro does)."""

    def __init__(self) -> None:
        self.named: dict[str, tuple[DataType, Convert]] = {}

    def build(self, schema: Any) -> tuple[DataType, Convert, bool]:
        """(Spark type, converter from the plain Avro datum, nullable)."""
        if isinstance(schema, list):
            branches = [b for b in schema if b != "null"]
            if len(branches) != 1:
                raise ValueError(f"unsupported Avro union {schema!r}")
            dtype, convert, _ = self.build(branches[0])
            return dtype, (lambda v: None if v is None else convert(v)), True
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema], (lambda v: v), False
            dtype, convert = self.named[schema]
            return dtype, convert, False
        kind = schema["type"]
        if kind == "array":
            item_type, item_convert, item_nullable = self.build(schema["items"])
            return ArrayType(item_type, item_nullable), (lambda v: [item_convert(x) for x in v]), False
        if kind == "record":
            fields: list[StructField] = []
            converters: list[tuple[str, Convert]] = []
            for f in schema["fields"]:
                ftype, fconvert, fnullable = self.build(f["type"])
                fields.append(StructField(f["name"], ftype, fnullable))
                converters.append((f["name"], fconvert))
            dtype = StructType(fields)

            def convert(v: dict[str, Any]) -> tuple[Any, ...]:
                return tuple(c(v.get(name)) for name, c in converters)

            self.named[schema["name"]] = (dtype, convert)
            return dtype, convert, False
        return self.build(kind)


def _value_structs(definitions: tuple[RecordDef, ...]) -> tuple[StructType, dict[int, tuple[int, Convert]]]:
    fields: list[StructField] = []
    converters: dict[int, tuple[int, Convert]] = {}
    for i, d in enumerate(definitions):
        dtype, convert, _ = _AvroToSpark().build(d.value_schemas[d.latest_version])
        fields.append(StructField(value_field(d.type), dtype, True))
        converters[int(d.type)] = (i, convert)
    return StructType(fields), converters


VALUE_TYPE, _VALUE_CONVERTERS = _value_structs(DEFINITIONS)

SCHEMA = StructType(
    [
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp", TimestampType(), True),
        StructField("shard_epoch", IntegerType(), True),
        StructField("batch_index", IntegerType(), True),
        StructField("batch_count", IntegerType(), True),
        StructField("record_type", StringType(), True),
        StructField("record_type_id", IntegerType(), True),
        StructField("schema_version", IntegerType(), True),
        StructField("tombstone", BooleanType(), True),
        StructField("group_id", StringType(), True),
        StructField("member_id", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("topic_partition", IntegerType(), True),
        StructField("regex", StringType(), True),
        # PendingTxnOffsets (both), TxnProducer (producer_id): which producer's transaction, and
        # where its record sits in the transaction topic.
        StructField("producer_id", LongType(), True),
        StructField("txn_offset", LongType(), True),
        # ShareUpdate: the update's index since its snapshot (part of its key).
        StructField("slot", IntegerType(), True),
        StructField("value", VALUE_TYPE, True),
        StructField("error", StringType(), True),
        StructField("raw_key", BinaryType(), True),
        StructField("raw_value", BinaryType(), True),
    ]
)
COLUMNS = tuple(f.name for f in SCHEMA.fields)

_VALUE_HEADER = struct.Struct(">hh")
_N_VALUES = len(VALUE_TYPE.fields)


def _timestamp(ms: int) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms > 0 else None


def to_row(
    partition: int,
    offset: int,
    timestamp_ms: int,
    key: bytes | None,
    value: bytes | None,
    headers: Any,
    codec: RecordCodec = DEFAULT_CODEC,
) -> tuple[Any, ...]:
    """One log record as a row of ``SCHEMA``; an unreadable record gives a row with ``error`` set
    (and its raw bytes) instead of an exception, so one bad record never fails a job."""
    ts = _timestamp(timestamp_ms)
    try:
        epoch, batch = parse_headers(headers)
    except (ValueError, struct.error) as exc:
        return _error_row(partition, offset, ts, None, key, value, f"bad headers: {exc}")
    index, count = batch if batch is not None else (None, None)
    try:
        record = codec.decode(key, value)
    except RecordDecodeError as exc:
        return _error_row(partition, offset, ts, epoch, key, value, str(exc), index, count)
    k = record.key
    version = _VALUE_HEADER.unpack_from(value)[1] if value is not None else None
    values: list[Any] = [None] * _N_VALUES
    if record.value is not None:
        slot, convert = _VALUE_CONVERTERS[int(record.type)]
        values[slot] = convert(to_avro(record.value))
    return (
        partition,
        offset,
        ts,
        epoch,
        index,
        count,
        record.type.name,
        int(record.type),
        version,
        record.value is None,
        getattr(k, "group", None),
        getattr(k, "member_id", None),
        getattr(k, "topic", None),
        getattr(k, "partition", None),
        getattr(k, "regex", None),
        getattr(k, "producer_id", None),
        getattr(k, "txn_offset", None),
        getattr(k, "slot", None),
        tuple(values),
        None,
        None,
        None,
    )


def _error_row(
    partition: int,
    offset: int,
    ts: datetime | None,
    epoch: int | None,
    key: bytes | None,
    value: bytes | None,
    error: str,
    index: int | None = None,
    count: int | None = None,
) -> tuple[Any, ...]:
    type_id = struct.unpack_from(">h", key)[0] if key is not None and len(key) >= 2 else None
    return (
        partition,
        offset,
        ts,
        epoch,
        index,
        count,
        "UNREADABLE",
        type_id,
        None,
        value is None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        error,
        key,
        value,
    )


def of_type(t: RecordType) -> Column:
    """Rows of the log holding records of type ``t``."""
    return F.col("record_type_id") == int(t)


def member_epochs(current: DataFrame, ca: Column) -> DataFrame:
    """Each member's epochs and state from its current-assignment records (``ca``: the decoded
    value's column that holds them), as consumer and share groups both write them."""
    return current.select(
        "partition",
        "group_id",
        "member_id",
        ca.member_epoch.alias("member_epoch"),
        ca.previous_member_epoch.alias("previous_member_epoch"),
        ca.state.alias("member_state"),
    )
