"""Reading and setting a Fetch request's MaxWaitMs in its bytes (the reader relay's held fetches)."""

from __future__ import annotations

import struct

import pytest

from groupcoord.coordinator.gateway.fetch_wait import max_wait_ms, max_wait_offset, with_max_wait


def _frame(version: int, client_id: str | None, wait_ms: int, header_tags: bytes = b"\x00") -> bytes:
    """A Fetch request as librdkafka writes one: header, ReplicaId, MaxWaitMs, MinBytes and a tail."""
    header = struct.pack(">hhi", 1, version, 42)
    header += struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id.encode()
    if version >= 12:
        header += header_tags
    body = struct.pack(">iii", -1, wait_ms, 1) + b"\x7f" * 9
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("version", [4, 11, 12, 14])
@pytest.mark.parametrize("client_id", ["rdkafka", "", None])
def test_the_wait_is_found_and_set_in_place(version: int, client_id: str | None) -> None:
    frame = _frame(version, client_id, 5)
    offset = max_wait_offset(frame)
    assert offset is not None and max_wait_ms(frame, offset) == 5
    changed = with_max_wait(frame, offset, 1)
    assert max_wait_ms(changed, offset) == 1
    assert changed == _frame(version, client_id, 1)


def test_the_header_tagged_fields_are_skipped() -> None:
    # One tagged field (tag 3) of 4 bytes in the request header.
    frame = _frame(12, "c", 250, header_tags=b"\x01\x03\x04abcd")
    offset = max_wait_offset(frame)
    assert offset is not None and max_wait_ms(frame, offset) == 250


@pytest.mark.parametrize(
    "frame",
    [
        _frame(15, "c", 5),  # no ReplicaId from v15: a layout the relay never lets through
        struct.pack(">i", 12) + struct.pack(">hhi", 3, 12, 1) + b"\x00\x00",  # Metadata, not Fetch
        _frame(12, "c", 5)[:22],  # cut short of its MaxWaitMs
        _frame(12, "c", 5, header_tags=b"\x01\x03\x7f")[:30],  # a tagged field running past the end
    ],
)
def test_anything_else_is_left_alone(frame: bytes) -> None:
    assert max_wait_offset(frame) is None
