"""The classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, KIP-345 static
membership, eager and KIP-429 cooperative clients) as pure handlers over ``ClassicGroupsState``.

Handlers follow the runtime contract (``groupcoord.coordinator.runtime.api``): ``(state, request, [token,]
ctx) -> Result``; requests and answers are the generated classes of ``groupcoord.coordinator.messages``,
``ctx`` the GroupContext (time, config, API version and client). JoinGroup and SyncGroup may
park (``Park(token)``) and are answered by a later Result's ``completions``. Timers come back
as ``ClassicTimer`` events for ``classic_on_timer``; after a load, ``classic_on_loaded`` arms
the members' sessions.
"""

from groupcoord.coordinator.groups.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.groups.classic.describe import describe_group, describe_groups, list_groups
from groupcoord.coordinator.groups.classic.group import ClassicGroup
from groupcoord.coordinator.groups.classic.group_state import ClassicGroupState, IllegalStateTransition
from groupcoord.coordinator.groups.classic.heartbeat import classic_commit_keepalive, classic_heartbeat
from groupcoord.coordinator.groups.classic.join import classic_join
from groupcoord.coordinator.groups.classic.leave import classic_leave
from groupcoord.coordinator.groups.classic.log_records import group_metadata_tombstone
from groupcoord.coordinator.groups.classic.member import ClassicGroupMember
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.classic.sync import classic_sync
from groupcoord.coordinator.groups.classic.timeouts import classic_on_loaded, classic_on_timer, is_classic_timer
from groupcoord.coordinator.groups.classic.timers import ClassicTimer
from groupcoord.coordinator.groups.config import ClassicGroupConfig

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "Assignment",
    "ClassicGroup",
    "ClassicGroupConfig",
    "ClassicGroupMember",
    "ClassicGroupState",
    "ClassicGroupsState",
    "ClassicTimer",
    "IllegalStateTransition",
    "Subscription",
    "TopicPartitions",
    "classic_commit_keepalive",
    "classic_heartbeat",
    "classic_join",
    "classic_leave",
    "classic_on_loaded",
    "classic_on_timer",
    "classic_sync",
    "decode_assignment",
    "decode_subscription",
    "describe_group",
    "describe_groups",
    "encode_assignment",
    "encode_subscription",
    "group_metadata_tombstone",
    "is_classic_timer",
    "list_groups",
]
