"""Long answers encoded in slices (``gateway/sliced_encoding``): the same frame as encoding them
whole, and the event loop runs while they are encoded."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.coordinator.gateway.apis import APIS
from groupcoord.coordinator.gateway.codec import CodecError
from groupcoord.coordinator.gateway.protocol import encode_response
from groupcoord.coordinator.gateway.sliced_encoding import SLICED_FROM, encode_arrays_ahead
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.messages.describe_groups import (
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    DescribeGroupsResponseDescribedGroupMember,
)
from groupcoord.coordinator.messages.list_groups import ListGroupsResponse, ListGroupsResponseListedGroup
from groupcoord.coordinator.messages.schema import Message
from tests.loop_turns import turns_while

LIST, DESCRIBE = 16, 15


def listing(count: int) -> ListGroupsResponse:
    return ListGroupsResponse(
        error_code=0,
        groups=[
            ListGroupsResponseListedGroup(
                group_id=f"group-{i}", protocol_type="consumer", group_state="Empty", group_type="classic"
            )
            for i in range(count)
        ],
    )


def description(count: int) -> DescribeGroupsResponse:
    member = DescribeGroupsResponseDescribedGroupMember(
        member_id="m-1", group_instance_id="static-1", client_id="c", client_host="/127.0.0.1", member_metadata=b"\x01"
    )
    return DescribeGroupsResponse(
        groups=[
            DescribeGroupsResponseDescribedGroup(
                group_id=f"group-{i}", group_state="Stable", protocol_type="consumer", members=[member] * (i % 3)
            )
            for i in range(count)
        ]
    )


def sliced_frame(key: int, version: int, response: Message) -> bytes:
    ahead = asyncio.run(encode_arrays_ahead(response, version, APIS[key].flexible(version)))
    return encode_response(key, version, 7, ahead)


@pytest.mark.parametrize("version", [0, 2, 3, 5])
@pytest.mark.parametrize("count", [0, SLICED_FROM - 1, SLICED_FROM, 3 * SLICED_FROM + 5])
def test_a_sliced_listing_is_the_frame_encoded_whole(version: int, count: int) -> None:
    response = listing(count)
    assert sliced_frame(LIST, version, response) == encode_response(LIST, version, 7, response)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_the_listing_rows_are_encoded_as_the_wire_entries_they_stand_for(version: int) -> None:
    # The service's rows go into the answer as they are (no wire copy of each): same frame.
    wire = listing(SLICED_FROM + 3)
    rows = ListGroupsResponse(
        error_code=0,
        groups=[GroupSummary(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in wire.groups],
    )
    assert sliced_frame(LIST, version, rows) == encode_response(LIST, version, 7, wire)
    assert encode_response(LIST, version, 7, rows) == encode_response(LIST, version, 7, wire)


@pytest.mark.parametrize("version", [0, 4, 5, 6])
def test_a_sliced_description_is_the_frame_encoded_whole(version: int) -> None:
    response = description(2 * SLICED_FROM + 1)
    assert sliced_frame(DESCRIBE, version, response) == encode_response(DESCRIBE, version, 7, response)


def test_the_handlers_answer_is_left_as_it_was() -> None:
    response = listing(SLICED_FROM)
    groups = response.groups
    sliced_frame(LIST, 5, response)
    assert response.groups is groups and len(groups) == SLICED_FROM


def test_an_item_that_cannot_be_encoded_is_a_codec_error() -> None:
    response = listing(SLICED_FROM)
    response.groups[5].group_id = 17  # type: ignore[assignment]
    with pytest.raises(CodecError):
        sliced_frame(LIST, 5, response)


def test_the_loop_runs_while_a_long_answer_is_encoded() -> None:
    # 50,000 groups: tens of milliseconds of encoding on any machine, the loop let run every 2.
    _, during = turns_while(lambda: encode_arrays_ahead(listing(50_000), 5, True))
    assert during > 0
