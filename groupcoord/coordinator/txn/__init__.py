"""Transactional offsets through the sidecar (TxnOffsetCommit): see ``bridge``."""
