"""ClassicGroupMember: one member of a classic group, persisted fields plus its parked requests."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol


@dataclass(slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    # In the client's order of preference, which is what ``vote`` honours.
    supported_protocols: tuple[JoinGroupRequestProtocol, ...]
    assignment: bytes = b""
    # Soft state: the tokens of a parked JoinGroup / SyncGroup, and whether the member joined in
    # the current rebalance (a new member cannot heartbeat, so it is not excused while parked).
    awaiting_join: Hashable | None = None
    awaiting_sync: Hashable | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.supported_protocols)

    def metadata(self, protocol_name: str | None) -> bytes:
        for protocol in self.supported_protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def has_satisfied_heartbeat(self) -> bool:
        """A parked existing member is alive by definition; a new one can still expire while parked."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def matches(self, protocols: Iterable[JoinGroupRequestProtocol]) -> bool:
        # By value: the (name, metadata) pairs in order, whatever else a request struct carries.
        return [(p.name, p.metadata) for p in protocols] == [(p.name, p.metadata) for p in self.supported_protocols]

    def vote(self, candidates: frozenset[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for protocol in self.supported_protocols:
            if protocol.name in candidates:
                return protocol.name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")
