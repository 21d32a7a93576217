"""Share sessions (KIP-932): the share-partitions a member fetches, and the session epoch.

Kafka's ``ShareSessionCache`` / ``SharePartitionManager.newContext``, keyed by (group, member):

- ShareFetch with epoch 0 opens a session (replacing one the member had); it may carry no
  acknowledgements (INVALID_REQUEST), since none can be due in a new session.
- Any other epoch needs the session (SHARE_SESSION_NOT_FOUND) at exactly that epoch
  (INVALID_SHARE_SESSION_EPOCH); the session then moves to the next epoch (after 2^31-1: 1).
- Epoch -1 closes it: the request's acknowledgements are applied and the member's records of
  that session are released.
- ShareAcknowledge never opens one (epoch 0 is INVALID_SHARE_SESSION_EPOCH) and does not change
  the partitions.

A session belongs to the client connection that opened it (Kafka 4.1+: ``ShareSessionCache``
keeps each session's connection id): when that connection closes, ``drop_connection`` removes its
sessions and the data path releases the records acquired under them, for redelivery to the other
members at once rather than after the acquisition lock.

Pure: no I/O, no clock. Sessions are per process (as per broker in Kafka): a client that turns
to another sidecar process gets SHARE_SESSION_NOT_FOUND and opens a new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from groupcoord.coordinator.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

# (topic name, partition)
TopicPartition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group: str
    member: str
    epoch: int
    # In the order added, each with the topic id the client named it by (Kafka keys a session's
    # partitions by topic id): a topic deleted and re-created under the same name is another
    # topic, and the session's partition of the old one is answered UNKNOWN_TOPIC_ID.
    partitions: dict[TopicPartition, uuid.UUID | None] = field(default_factory=dict)
    # The client connection that opened it (for a relayed request: the client's connection at
    # the process that relayed it); "" for none.
    connection: str = ""


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    error: ErrorCode
    session: ShareSession | None = None
    closing: bool = False


class ShareSessionCache:
    def __init__(self, max_sessions: int = 10_000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        # connection -> the (group, member) keys of the sessions it opened
        self._by_connection: dict[str, set[tuple[str, str]]] = {}

    def get(self, group: str, member: str) -> ShareSession | None:
        return self.sessions.get((group, member))

    def check_fetch(self, group: str, member: str, epoch: int, has_acks: bool) -> ErrorCode:
        """The error a ShareFetch gets before anything is done (NONE: it may proceed)."""
        session = self.sessions.get((group, member))
        if epoch == INITIAL_EPOCH:
            if has_acks:
                return ErrorCode.INVALID_REQUEST
            if session is None and len(self.sessions) >= self.max_sessions:
                return ErrorCode.SHARE_SESSION_LIMIT_REACHED
            return ErrorCode.NONE
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        return ErrorCode.NONE

    def fetch(
        self,
        group: str,
        member: str,
        epoch: int,
        has_acks: bool,
        wanted: Iterable[TopicPartition],
        forgotten: Iterable[TopicPartition],
        connection: str = "",
        topic_ids: Mapping[str, uuid.UUID] | None = None,
        forgotten_ids: Iterable[tuple[uuid.UUID, int]] = (),
    ) -> SessionOutcome:
        """Open, advance or close the member's session for a ShareFetch (that came on
        ``connection``: the one a new session belongs to). ``topic_ids`` are the ids the request
        named the ``wanted`` topics by; ``forgotten_ids`` are forgotten partitions of topics no
        longer known by name (deleted), dropped from the session by the id they were added with."""
        error = self.check_fetch(group, member, epoch, has_acks)
        if error is not ErrorCode.NONE:
            return SessionOutcome(error)
        key = (group, member)
        if epoch == FINAL_EPOCH:
            return SessionOutcome(ErrorCode.NONE, self._pop(key), closing=True)
        if epoch == INITIAL_EPOCH:
            self._pop(key)
            session = self.sessions[key] = ShareSession(group, member, next_epoch(INITIAL_EPOCH), connection=connection)
            if connection:
                self._by_connection.setdefault(connection, set()).add(key)
        else:
            session = self.sessions[key]
            session.epoch = next_epoch(session.epoch)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        gone = set(forgotten_ids)
        if gone:
            for tp in [tp for tp, tid in session.partitions.items() if tid is not None and (tid, tp[1]) in gone]:
                del session.partitions[tp]
        ids = topic_ids or {}
        for tp in wanted:
            session.partitions[tp] = ids.get(tp[0])
        return SessionOutcome(ErrorCode.NONE, session)

    def check_acknowledge(self, group: str, member: str, epoch: int) -> ErrorCode:
        """The error a ShareAcknowledge gets before anything is done (NONE: it may proceed)."""
        if epoch == INITIAL_EPOCH:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session = self.sessions.get((group, member))
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH
        return ErrorCode.NONE

    def acknowledge(self, group: str, member: str, epoch: int) -> SessionOutcome:
        """Check and advance (or close) the member's session for a ShareAcknowledge."""
        error = self.check_acknowledge(group, member, epoch)
        if error is not ErrorCode.NONE:
            return SessionOutcome(error)
        key = (group, member)
        if epoch == FINAL_EPOCH:
            return SessionOutcome(ErrorCode.NONE, self._pop(key), closing=True)
        session = self.sessions[key]
        session.epoch = next_epoch(session.epoch)
        return SessionOutcome(ErrorCode.NONE, session)

    def drop_connection(self, connection: str) -> list[ShareSession]:
        """The sessions ``connection`` opened, removed: it closed."""
        return [s for key in self._by_connection.pop(connection, ()) if (s := self._pop(key)) is not None]

    def _pop(self, key: tuple[str, str]) -> ShareSession | None:
        session = self.sessions.pop(key, None)
        if session is not None and session.connection:
            keys = self._by_connection.get(session.connection)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_connection[session.connection]
        return session
