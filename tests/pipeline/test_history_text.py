"""How ``pipeline history`` writes instants and assigned partitions (no Spark session needed)."""

from __future__ import annotations

from types import SimpleNamespace

from groupcoord.pipeline.jobs import partition_names, utc_text


def test_instants_are_utc_with_a_zone_whatever_the_local_zone(berlin: None) -> None:
    # The history printed 2026-11-25T19:17:24.647000: local time of the machine, with no zone.
    assert utc_text(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert utc_text(None) is None


def test_assigned_partitions_are_named_as_kafka_names_them() -> None:
    orders, gone = "AaIUJCwUT2yDk2Q3b0NGsA", "ZZZZZZZZT2yDk2Q3b0NGsA"
    assignment = [SimpleNamespace(topic_id=orders, partitions=[1, 0]), SimpleNamespace(topic_id=gone, partitions=[2])]
    assert partition_names(assignment, {orders: "orders"}) == ["ZZZZZZZZ:2", "orders-0", "orders-1"]
