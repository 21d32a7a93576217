from __future__ import annotations

from groupcoord.coordinator.service.partitioning import java_string_hash, partition_for


def test_java_string_hash_matches_java() -> None:
    # Values of String.hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\U0001f600") == 1772899  # surrogate pair, hashed as two UTF-16 units


def test_partition_for_uses_kafka_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    for g in ("a", "group-1", "x" * 100):
        assert 0 <= partition_for(g, 16) < 16
