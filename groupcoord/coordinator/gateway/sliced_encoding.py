"""A large answer's long arrays encoded in slices, the event loop running in between.

An answer is encoded in one go on the event loop, which is right for nearly all of them. A
ListGroups answer over 100,000 groups took 0.3-0.6 s to encode (3.7 MB), and every other
connection (heartbeats included) waited that long behind it: the listing itself is already taken
in slices (``service/answer_budget``), so the encoding was the one long step left. Here each
top-level array of at least ``SLICED_FROM`` structs is encoded ahead, item by item with the
codec's own writer, letting the loop run every 2 ms; the answer is then
encoded as usual with those bytes in the array's place (``codec.EncodedItems``), so the frame is
byte for byte the one encoding it whole gives. The answer was complete before its encoding
starts and nothing else holds it, so what is sent is the one answer the handler built.
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import time

from groupcoord.coordinator.gateway.codec import CodecError, EncodedItems, item_writer
from groupcoord.coordinator.messages.schema import Message

# Arrays shorter than this are encoded with the rest of the answer (a millisecond or two at
# most). Not 1,024: a DescribeGroups of 1,000 groups, as admin tools send them, took 4.5 ms to
# encode in one go on a calm machine, 15-25 ms seen on the loop on a busy one.
SLICED_FROM = 256
# The loop runs at least this often while an answer is encoded (as while one is built:
# ``service/answer_budget.YIELD_EVERY_SECONDS``).
YIELD_EVERY_SECONDS = 0.002
# Items encoded between two looks at the clock.
_CHECK_EVERY = 256


async def encode_arrays_ahead(response: Message, version: int, flexible: bool) -> Message:
    """``response``, or a copy of it whose long top-level arrays of structs are encoded ahead."""
    ahead: dict[str, EncodedItems] = {}
    for f in response.SCHEMA:
        if f.kind != "array" or f.struct is None or version not in f.versions or version in f.tagged:
            continue
        items = getattr(response, f.name)
        if type(items) is not list or len(items) < SLICED_FROM:
            continue
        write = item_writer(f, version, flexible)
        out = bytearray()
        yielded_at = time.perf_counter()
        try:
            for count, item in enumerate(items, 1):
                write(out, item)
                if count % _CHECK_EVERY == 0 and time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
                    await asyncio.sleep(0)
                    yielded_at = time.perf_counter()
        except (struct.error, AttributeError, TypeError) as exc:  # as ``codec.encode_struct`` reports them
            raise CodecError(f"cannot encode {type(response).__name__} v{version}: {exc}") from exc
        ahead[f.name] = EncodedItems(len(items), bytes(out))
    return dataclasses.replace(response, **ahead) if ahead else response  # type: ignore[arg-type]
