"""Share groups (KIP-932): the share-partition state machine and its durable records.

Pure logic like ``groupcoord/coordinator/groups``: no I/O, no clock reads (time comes in as arguments),
deterministic. ``partition.py`` holds the live state of one share-partition (which member holds
which record, until when); ``state.py`` its durable form (ShareSnapshot / ShareUpdate records, the
replay that rebuilds it, and the rule that turns a change into records). The model is described in
``docs/design/share-partitions.md``.
"""
