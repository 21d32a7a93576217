"""How long a share read of the cluster lets the broker wait (``log_read_wait_ms``): for new records
only when every partition of the ShareFetch is read at its end; with records there, the rest of the
ShareFetch's wait, which a broker that spends it finding them needs (Tansu's memory store); never
while other partitions' records are already answered."""

from __future__ import annotations

from groupcoord.coordinator.service.share_data import log_read_wait_ms
from groupcoord.coordinator.service.share_fetcher import MIN_FETCH_WAIT_MS


def test_records_there_give_the_broker_the_fetchs_wait_to_find_them() -> None:
    # A partition not at its end: records are there; 10 ms starved a long Tansu partition.
    assert log_read_wait_ms([False], all_at_end=False, wait_ms=480) == 480
    assert log_read_wait_ms([True, False], all_at_end=False, wait_ms=480) == 480


def test_every_partition_at_its_end_waits_for_new_records() -> None:
    assert log_read_wait_ms([True, True], all_at_end=True, wait_ms=480) == 480


def test_at_its_end_beside_answered_partitions_does_not_wait() -> None:
    # Other partitions' records are answered from their last reads: they must not wait for new ones.
    assert log_read_wait_ms([True], all_at_end=False, wait_ms=480) == MIN_FETCH_WAIT_MS


def test_never_below_the_wait_a_broker_answers_with_partitions() -> None:
    # A ShareFetch with no wait left (or a read begun ahead) still asks for the minimum: Tansu answers
    # a Fetch that may not wait with no partitions at all.
    assert log_read_wait_ms([False], all_at_end=False, wait_ms=0) == MIN_FETCH_WAIT_MS
    assert log_read_wait_ms([True], all_at_end=True, wait_ms=0) == MIN_FETCH_WAIT_MS
