"""Online migration of non-empty groups between the classic and the consumer protocol
(KIP-848 "Supporting Online Consumer Group Upgrade", ``group.consumer.migration.policy``).

* ``upgrade_and_join``: the first consumer-protocol member converts a stable classic group.
* ``classic_*_to_consumer_group``: classic members inside a consumer group, reconciled one by
  one by the consumer-group engine through JoinGroup/SyncGroup/Heartbeat/LeaveGroup.
* ``consumer_leave`` / ``fence_or_downgrade`` / ``on_timer``: when only classic members remain,
  the group becomes a classic group again and rebalances.
"""

from coordinator.groups.migration.classic_members import (
    classic_heartbeat_to_consumer_group,
    classic_join_to_consumer_group,
    classic_sync_to_consumer_group,
)
from coordinator.groups.migration.convert import downgrade, downgrade_allowed, upgrade_records, validate_online_upgrade
from coordinator.groups.migration.handlers import (
    classic_leave_to_consumer_group,
    consumer_leave,
    fence_or_downgrade,
    is_migration_timer,
    on_timer,
    upgrade_and_join,
)
from coordinator.groups.migration.timers import ClassicMemberJoinTimeout, ClassicMemberSyncTimeout

__all__ = [
    "ClassicMemberJoinTimeout",
    "ClassicMemberSyncTimeout",
    "classic_heartbeat_to_consumer_group",
    "classic_join_to_consumer_group",
    "classic_leave_to_consumer_group",
    "classic_sync_to_consumer_group",
    "consumer_leave",
    "downgrade",
    "downgrade_allowed",
    "fence_or_downgrade",
    "is_migration_timer",
    "on_timer",
    "upgrade_and_join",
    "upgrade_records",
    "validate_online_upgrade",
]
