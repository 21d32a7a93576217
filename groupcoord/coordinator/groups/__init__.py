"""Pure group-protocol logic: no I/O, no clock reads, no randomness.

* ``groupcoord.coordinator.groups.consumer``: KIP-848 consumer groups (state, replay, handlers, timers).
* ``groupcoord.coordinator.groups.share``: KIP-932 share groups' membership (state, replay, heartbeat, describe).
* ``groupcoord.coordinator.groups.assignors``: server-side assignors ``uniform`` and ``range``, and share
  groups' ``simple``.
* ``groupcoord.coordinator.groups.config``: ``group.consumer.*``, ``group.share.*`` and classic configuration.
* ``groupcoord.coordinator.groups.topics``: topic metadata passed in as data (``TopicsImage``).
* ``groupcoord.coordinator.groups.classic``: classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup).
* ``groupcoord.coordinator.groups.migration``: classic members inside consumer groups, and conversions.
* ``groupcoord.coordinator.groups.routing``: which engine answers a request; when a group converts.
* ``groupcoord.coordinator.groups.group``: the ``Group`` face every group type shows offsets and admin.
* ``groupcoord.coordinator.groups.context``: ``GroupContext``, what one call is handled against.
"""
