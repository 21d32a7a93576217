"""Kafka protocol error codes returned by the group logic (numeric values as in Kafka's ``Errors``)."""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    REBALANCE_IN_PROGRESS = 27
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128


class GroupError(Exception):
    """A request-level failure: the handler turns it into an error response and writes nothing."""

    def __init__(self, error: Errors, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message
