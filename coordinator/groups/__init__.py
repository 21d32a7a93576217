"""Pure group-protocol logic: no I/O, no clock reads, no randomness.

* ``coordinator.groups.consumer``: KIP-848 consumer groups (state, replay, handlers, timers).
* ``coordinator.groups.share``: KIP-932 share groups' membership (state, replay, heartbeat, describe).
* ``coordinator.groups.assignors``: server-side assignors ``uniform`` and ``range``, and share
  groups' ``simple``.
* ``coordinator.groups.config``: ``group.consumer.*``, ``group.share.*`` and classic configuration.
* ``coordinator.groups.topics``: topic metadata passed in as data (``TopicsImage``).
* ``coordinator.groups.classic``: classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup).
* ``coordinator.groups.migration``: classic members inside consumer groups, and conversions.
* ``coordinator.groups.routing``: which engine answers a request; when a group converts.
* ``coordinator.groups.group``: the ``Group`` face every group type shows offsets and admin.
* ``coordinator.groups.context``: ``GroupContext``, what one call is handled against.
"""
