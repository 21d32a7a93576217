"""Pure group-protocol logic: no I/O, no clock reads, no randomness.

* ``coordinator.groups.consumer``: KIP-848 consumer groups (state, replay, handlers, timers).
* ``coordinator.groups.assignors``: server-side assignors ``uniform`` and ``range``.
* ``coordinator.groups.config``: ``group.consumer.*`` configuration.
* ``coordinator.groups.topics``: topic metadata passed in as data (``TopicsImage``).
* ``coordinator.groups.errors``: Kafka error codes (``ErrorCode``).
"""
