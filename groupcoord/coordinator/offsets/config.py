"""Offset-management configuration, with Apache Kafka's names and defaults."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OffsetsConfig(BaseModel):
    model_config = {"frozen": True, "populate_by_name": True}

    offset_metadata_max_bytes: int = Field(4096, ge=0, alias="offset.metadata.max.bytes")
    offsets_retention_minutes: int = Field(7 * 24 * 60, ge=1, alias="offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = Field(600_000, ge=1, alias="offsets.retention.check.interval.ms")
