"""Online migration of non-empty groups between the classic and the consumer protocol
(KIP-848 "Supporting Online Consumer Group Upgrade", ``group.consumer.migration.policy``).

* ``classic_members``: classic members inside a consumer group, reconciled one by one by the
  consumer-group engine through JoinGroup/SyncGroup/Heartbeat/LeaveGroup.
* ``convert``: the conversions themselves (upgrade records, downgrade to a classic group).

Which request converts a group, and when, is decided in ``groupcoord.coordinator.groups.routing``.
"""

from groupcoord.coordinator.groups.migration.classic_members import (
    classic_heartbeat_to_consumer_group,
    classic_join_to_consumer_group,
    classic_sync_to_consumer_group,
)
from groupcoord.coordinator.groups.migration.convert import (
    downgrade,
    downgrade_allowed,
    upgrade_records,
    validate_online_upgrade,
)
from groupcoord.coordinator.groups.migration.timers import ClassicMemberJoinTimeout, ClassicMemberSyncTimeout

__all__ = [
    "ClassicMemberJoinTimeout",
    "ClassicMemberSyncTimeout",
    "classic_heartbeat_to_consumer_group",
    "classic_join_to_consumer_group",
    "classic_sync_to_consumer_group",
    "downgrade",
    "downgrade_allowed",
    "upgrade_records",
    "validate_online_upgrade",
]
