"""KIP-848 consumer groups as pure functions over ``ConsumerGroupsState``.

Handlers return ``groupcoord.coordinator.runtime.api.Result``; the runtime replays ``Result.records`` into
the state with ``ConsumerGroupsState.replay`` and arms or cancels ``Result.timers``.
"""

from groupcoord.coordinator.groups.consumer.describe import (
    consumer_group_describe,
    group_exists,
    group_state,
    is_group_empty,
    list_group_states,
    subscribed_topic_names,
)
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ConsumerGroupState
from groupcoord.coordinator.groups.consumer.heartbeat import consumer_group_heartbeat
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.groups.consumer.offset_validation import (
    CommitValidation,
    delete_consumer_group,
    validate_offset_commit,
    validate_offset_fetch,
)
from groupcoord.coordinator.groups.consumer.requests import heartbeat_error_response
from groupcoord.coordinator.groups.consumer.state import CONSUMER_GROUP_RECORD_TYPES, ConsumerGroupsState
from groupcoord.coordinator.groups.consumer.timeouts import on_loaded, on_timer
from groupcoord.coordinator.groups.consumer.timers import AssignmentDue, RebalanceTimeout, SessionTimeout

__all__ = [
    "CONSUMER_GROUP_RECORD_TYPES",
    "AssignmentDue",
    "CommitValidation",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "ConsumerGroupsState",
    "MemberState",
    "RebalanceTimeout",
    "SessionTimeout",
    "consumer_group_describe",
    "consumer_group_heartbeat",
    "delete_consumer_group",
    "group_exists",
    "group_state",
    "heartbeat_error_response",
    "is_group_empty",
    "list_group_states",
    "on_loaded",
    "on_timer",
    "subscribed_topic_names",
    "validate_offset_commit",
    "validate_offset_fetch",
]
