"""The APIs the gateway decodes: key, request/response classes, versions, header versions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from groupcoord.coordinator.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from groupcoord.coordinator.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.coordinator.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from groupcoord.coordinator.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.coordinator.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.messages.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from groupcoord.coordinator.messages.share_fetch import ShareFetchRequest, ShareFetchResponse
from groupcoord.coordinator.messages.share_group_describe import ShareGroupDescribeRequest, ShareGroupDescribeResponse
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    METADATA = 3
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    request: type[Message]
    response: type[Message]

    @property
    def name(self) -> str:
        return self.request.__name__.removesuffix("Request")

    @property
    def min_version(self) -> int:
        return self.request.VALID.low

    @property
    def max_version(self) -> int:
        return self.request.VALID.high

    def supports(self, version: int) -> bool:
        return version in self.request.VALID

    def flexible(self, version: int) -> bool:
        return version in self.request.FLEXIBLE

    def request_header_version(self, version: int) -> int:
        if self.key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
            return 0
        return 2 if self.flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions answers keep header v0 forever so a client can always read the error and
        # the version list, whatever request version it guessed.
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.flexible(version) else 0


def _spec(request: type[Message], response: type[Message]) -> ApiSpec:
    return ApiSpec(request.API_KEY, request, response)


APIS: dict[int, ApiSpec] = {
    spec.key: spec
    for spec in (
        _spec(ApiVersionsRequest, ApiVersionsResponse),
        _spec(MetadataRequest, MetadataResponse),
        _spec(DescribeClusterRequest, DescribeClusterResponse),
        _spec(FindCoordinatorRequest, FindCoordinatorResponse),
        _spec(OffsetCommitRequest, OffsetCommitResponse),
        _spec(OffsetFetchRequest, OffsetFetchResponse),
        _spec(OffsetDeleteRequest, OffsetDeleteResponse),
        _spec(TxnOffsetCommitRequest, TxnOffsetCommitResponse),
        _spec(JoinGroupRequest, JoinGroupResponse),
        _spec(SyncGroupRequest, SyncGroupResponse),
        _spec(HeartbeatRequest, HeartbeatResponse),
        _spec(LeaveGroupRequest, LeaveGroupResponse),
        _spec(ListGroupsRequest, ListGroupsResponse),
        _spec(DescribeGroupsRequest, DescribeGroupsResponse),
        _spec(DeleteGroupsRequest, DeleteGroupsResponse),
        _spec(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
        _spec(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
        _spec(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse),
        _spec(ShareGroupDescribeRequest, ShareGroupDescribeResponse),
        _spec(ShareFetchRequest, ShareFetchResponse),
        _spec(ShareAcknowledgeRequest, ShareAcknowledgeResponse),
        _spec(DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse),
        _spec(AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse),
        _spec(DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse),
        # Split by resource type: GROUP resources go to the group handler, the rest to the cluster.
        _spec(DescribeConfigsRequest, DescribeConfigsResponse),
        _spec(AlterConfigsRequest, AlterConfigsResponse),
        _spec(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    )
}

# Answered by the group handler. FindCoordinator is not here: the gateway answers its GROUP keys
# itself and forwards TRANSACTION keys.
GROUP_API_KEYS: frozenset[int] = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.OFFSET_DELETE,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.LIST_GROUPS,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.DELETE_GROUPS,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    }
)
# Share groups (KIP-932), membership, data path (ShareFetch, ShareAcknowledge) and offsets
# administration (Describe/Alter/DeleteShareGroupOffsets): answered by the group handler only when the gateway serves share groups
# (``GatewayConfig.share_groups_enabled``); otherwise neither offered nor accepted.
SHARE_GROUP_API_KEYS: frozenset[int] = frozenset(
    {
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    }
)
