"""Answers too large to encode on the event loop.

Encoding is plain Python: a ListGroups answer naming 100,000 groups takes a few hundred
milliseconds, during which no other connection of this process is read, no heartbeat answered and
no placement heartbeat sent. Such an answer is encoded in a worker thread instead: the thread
holds the interpreter lock only for its switch interval (5 ms) at a time, so the event loop goes
on serving everyone else while the large answer is encoded.

Only answers the handler built from scratch for this one request qualify: nothing in them is
shared with state the event loop changes meanwhile, so the thread reads objects nobody else
touches. ListGroups is the one group API whose answer grows with the number of groups of a
process rather than with what the request names.
"""

from __future__ import annotations

from coordinator.gateway.apis import ApiKey
from coordinator.messages.list_groups import ListGroupsResponse
from coordinator.messages.schema import Message

# Below this, handing the work to a thread costs more than it saves.
OFF_LOOP_ENTRIES = 2048


def encode_off_loop(api_key: int, response: Message) -> bool:
    return (
        api_key == ApiKey.LIST_GROUPS
        and isinstance(response, ListGroupsResponse)
        and len(response.groups) >= OFF_LOOP_ENTRIES
    )
