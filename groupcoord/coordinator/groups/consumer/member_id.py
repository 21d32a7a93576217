"""Coordinator-generated member ids (ConsumerGroupHeartbeat v0, classic members of consumer groups).

Kafka draws a random Uuid. A pure handler draws nothing itself: the service hands it random
bytes with each request (``RequestContext.nonce``), and the id is a hash of those and of inputs
that differ between any two joins the coordinator can see (the group epoch moves on every
accepted join; the clock, client and member count separate the rest), so ids are unpredictable
in production and a function of the seed in simulations. The format matches Kafka's
``Uuid.toString()`` (22 characters of URL-safe base64); collisions with a live member are skipped.
"""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING

from groupcoord.coordinator.groups.context import GroupContext

if TYPE_CHECKING:
    from groupcoord.coordinator.groups.consumer.group import ConsumerGroup


def generate_member_id(group: ConsumerGroup, instance_id: str | None, ctx: GroupContext, member_count: int) -> str:
    """``member_count`` separates joins alike in every other input (the members so far, or a counter)."""
    group_id, group_epoch, taken = group.group_id, group.group_epoch, group.members
    now_ms, client_id, client_host = ctx.now_ms, ctx.request.client_id, ctx.request.client_host
    attempt = 0
    while True:
        seed = (
            f"{group_id}\0{group_epoch}\0{member_count}\0{now_ms}\0{client_id}\0{client_host}\0{instance_id}\0{attempt}"
            f"\0{ctx.request.nonce.hex()}"
        )
        digest = hashlib.blake2b(seed.encode(), digest_size=16).digest()
        member_id = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if member_id not in taken:
            return member_id
        attempt += 1
