"""The gateway side of group configs: versions offered, split and merge in request order, and
Kafka's ACL rules (ALTER_CONFIGS / DESCRIBE_CONFIGS on the group) per resource."""

from __future__ import annotations

import asyncio
import uuid

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer, configs
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.rewrite import merge_api_versions
from groupcoord.coordinator.messages import describe_configs as dc
from groupcoord.coordinator.messages import incremental_alter_configs as iac
from groupcoord.coordinator.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.authorizer import (
    Acl,
    AclAuthorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from groupcoord.coordinator.service.secured_handler import SecuredHandler
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient

GROUP, TOPIC = 32, 2
UNSUPPORTED_VERSION = 35


def resource(kind: int, name: str) -> dc.DescribeConfigsResource:
    return dc.DescribeConfigsResource(resource_type=kind, resource_name=name, configuration_keys=None)


def answer(kind: int, name: str, code: int = 0) -> dc.DescribeConfigsResult:
    return dc.DescribeConfigsResult(resource_type=kind, resource_name=name, error_code=code)


def test_config_apis_are_offered_within_what_the_gateway_decodes() -> None:
    cluster = ApiVersionsResponse(
        api_keys=[ApiVersionsResponseApiVersion(api_key=32, min_version=0, max_version=9)]  # newer than ours
    )
    offered = {k.api_key: (k.min_version, k.max_version) for k in merge_api_versions(cluster).api_keys}
    assert offered[32] == (0, 4)
    # Not in the cluster at all: still offered, group configs do not need the cluster.
    assert offered[44] == (0, 1) and offered[33] == (0, 2)


def test_a_request_is_split_by_resource_type_and_answered_in_request_order() -> None:
    request = dc.DescribeConfigsRequest(resources=[resource(TOPIC, "t"), resource(GROUP, "g"), resource(TOPIC, "u")])
    assert configs.names_groups(request)
    groups, rest = configs.split(request)
    assert [r.resource_name for r in groups.resources] == ["g"]  # type: ignore[attr-defined]
    assert rest is not None and [r.resource_name for r in rest.resources] == ["t", "u"]  # type: ignore[attr-defined]
    # The cluster may answer in its own order; the merged answer follows the request.
    cluster = dc.DescribeConfigsResponse(results=[answer(TOPIC, "u"), answer(TOPIC, "t")])
    local = dc.DescribeConfigsResponse(results=[answer(GROUP, "g")])
    merged = configs.merge(request, [local, cluster])
    assert [r.resource_name for r in merged.results] == ["t", "g", "u"]  # type: ignore[attr-defined]
    only_topics = dc.DescribeConfigsRequest(resources=[resource(TOPIC, "t")])
    assert not configs.names_groups(only_topics)


class Echo:
    """The coordinator's handler stand-in: every resource it is given answers NONE."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        names = [r.resource_name for r in request.resources]  # type: ignore[attr-defined]
        self.seen += names
        if isinstance(request, dc.DescribeConfigsRequest):
            return dc.DescribeConfigsResponse(results=[answer(GROUP, n) for n in names])
        return iac.IncrementalAlterConfigsResponse(
            responses=[
                iac.IncrementalAlterConfigsResponseAlterConfigsResourceResponse(resource_type=GROUP, resource_name=n)
                for n in names
            ]
        )


class NoTopics:
    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        return None

    async def id_of(self, name: str) -> str | None:
        return None

    async def uuid_of(self, name: str) -> uuid.UUID | None:
        return None


def acl(name: str, op: Operation) -> Acl:
    return Acl(ResourceType.GROUP, name, PatternType.LITERAL, "User:alice", "*", op, Permission.ALLOW)


def test_altering_a_group_config_needs_alter_configs_on_the_group() -> None:
    inner = Echo()
    authorizer = AclAuthorizer([acl("mine", Operation.ALTER_CONFIGS), acl("read-only", Operation.READ)])
    handler = SecuredHandler(inner, NoTopics(), authorizer)  # type: ignore[arg-type]
    context = ConnectionContext(RequestHeader(44, 0, 1, "c"), "127.0.0.1", 1, 2, "alice")
    request = iac.IncrementalAlterConfigsRequest(
        resources=[
            iac.IncrementalAlterConfigsRequestAlterConfigsResource(resource_type=GROUP, resource_name=name)
            for name in ("read-only", "mine")
        ]
    )
    response = asyncio.run(handler.handle(context, request))
    assert isinstance(response, iac.IncrementalAlterConfigsResponse)
    assert [(r.resource_name, r.error_code) for r in response.responses] == [
        ("read-only", ErrorCode.GROUP_AUTHORIZATION_FAILED),
        ("mine", ErrorCode.NONE),
    ]
    assert inner.seen == ["mine"]


def test_describing_group_configs_needs_describe_configs_which_alter_configs_implies() -> None:
    inner = Echo()
    authorizer = AclAuthorizer([acl("alterable", Operation.ALTER_CONFIGS), acl("described", Operation.DESCRIBE)])
    handler = SecuredHandler(inner, NoTopics(), authorizer)  # type: ignore[arg-type]
    context = ConnectionContext(RequestHeader(32, 1, 1, "c"), "127.0.0.1", 1, 2, "alice")
    request = dc.DescribeConfigsRequest(resources=[resource(GROUP, "described"), resource(GROUP, "alterable")])
    response = asyncio.run(handler.handle(context, request))
    assert isinstance(response, dc.DescribeConfigsResponse)
    assert [(r.resource_name, r.error_code) for r in response.results] == [
        ("described", ErrorCode.GROUP_AUTHORIZATION_FAILED),
        ("alterable", ErrorCode.NONE),
    ]


def test_gateway_answers_group_resources_without_the_cluster_and_refuses_what_it_lacks() -> None:
    """A cluster without IncrementalAlterConfigs (the bootstrap address is a closed port): the
    GROUP resources are answered here, the others refused per resource, in request order."""

    def alter(*names: tuple[int, str]) -> iac.IncrementalAlterConfigsRequest:
        return iac.IncrementalAlterConfigsRequest(
            resources=[
                iac.IncrementalAlterConfigsRequestAlterConfigsResource(resource_type=kind, resource_name=name)
                for kind, name in names
            ]
        )

    async def main() -> None:
        inner = Echo()
        config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{free_port()}"], listen_port=0)
        async with GatewayServer(config, inner) as server:
            server.cluster.cached_ranges = lambda node_id: {32: (0, 4)}  # type: ignore[method-assign]
            client = await WireClient.connect("127.0.0.1", server.port)
            try:
                mixed = await client.call(44, 1, alter((TOPIC, "t"), (GROUP, "g"), (TOPIC, "u")))
                assert isinstance(mixed, iac.IncrementalAlterConfigsResponse)
                assert [(r.resource_name, r.error_code) for r in mixed.responses] == [
                    ("t", UNSUPPORTED_VERSION),
                    ("g", ErrorCode.NONE),
                    ("u", UNSUPPORTED_VERSION),
                ]
                topics_only = await client.call(44, 1, alter((TOPIC, "t")))
                assert isinstance(topics_only, iac.IncrementalAlterConfigsResponse)
                assert [(r.resource_name, r.error_code) for r in topics_only.responses] == [("t", UNSUPPORTED_VERSION)]
                assert inner.seen == ["g"]
            finally:
                await client.close()

    asyncio.run(main())
