"""Offset-management configuration, with Apache Kafka's names and defaults."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OffsetsConfig(BaseModel):
    model_config = {"frozen": True, "populate_by_name": True}

    offset_metadata_max_bytes: int = Field(4096, ge=0, alias="offset.metadata.max.bytes")
    offsets_retention_minutes: int = Field(7 * 24 * 60, ge=1, alias="offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = Field(600_000, ge=1, alias="offsets.retention.check.interval.ms")
    # How long a producer's sequence for the transaction topic is kept after its last staging with
    # nothing of it left staged (Kafka's broker forgets an idle transactional id after this too,
    # and the producer must then start a new epoch, at sequence 0): without it one record per
    # transactional producer that ever committed offsets stayed in the log for good.
    transactional_id_expiration_ms: int = Field(7 * 24 * 3600 * 1000, ge=1, alias="transactional.id.expiration.ms")
