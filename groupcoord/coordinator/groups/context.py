"""GroupContext: what one request (or timer) is handled against, as one value.

Kafka keeps these in GroupMetadataManager's fields (time, metadata image, configs) and in the
RequestContext (header and connection). Here they travel together so that a handler's signature
says what it decides on, not how many things it was handed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from groupcoord.coordinator.groups.config import ClassicGroupConfig, ConsumerGroupConfig, ShareGroupConfig
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.offsets.config import OffsetsConfig


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What Kafka takes from the request header and connection rather than the body."""

    api_version: int = 1
    client_id: str = ""
    client_host: str = ""
    # Random bytes the service draws for each request (the pure logic draws none): member ids
    # the coordinator hands out are derived from them, so they cannot be guessed. Empty in
    # simulations and tests, whose ids then stay a function of the seed.
    nonce: bytes = b""
    # Which topics the requesting principal may DESCRIBE, as the service's authorizer sees them
    # for this one request: a regex subscription resolves only to those (KIP-848). None: there
    # is no authorizer, every topic may be described.
    may_describe_topic: Callable[[str], bool] | None = None


@dataclass(frozen=True, slots=True)
class GroupContext:
    now_ms: int = 0
    image: TopicsImage = field(default_factory=TopicsImage.empty)
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    classic: ClassicGroupConfig = field(default_factory=ClassicGroupConfig)
    offsets: OffsetsConfig = field(default_factory=OffsetsConfig)
    request: RequestContext = field(default_factory=RequestContext)
    share: ShareGroupConfig = field(default_factory=ShareGroupConfig)

    @property
    def migration_enabled(self) -> bool:
        """group.consumer.migration.policy governs conversions between the protocols, nothing else."""
        return self.consumer.migration_policy != "disabled"

    def for_request(self, request: RequestContext) -> GroupContext:
        return replace(self, request=request)
