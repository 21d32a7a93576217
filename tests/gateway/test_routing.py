"""The gateway's routing decision, taken without a socket: each request and session gets the
action a Kafka broker (and the sidecar's own rules) call for."""

from __future__ import annotations

from groupcoord.coordinator.gateway import routing
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.protect import ProtectedTopics
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.coordinator.messages.produce import ProduceRequest, ProduceRequestTopicProduceData
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.test_protect_decoded import payload

LOG = "groupcoord-log"
FACTS = routing.Facts(
    authentication_required=False,
    authenticated=False,
    max_group_request_bytes=1 << 20,
    max_group_request_elements=10_000,
    broker_port=False,
    protected=ProtectedTopics([LOG]),
    cluster_ranges=None,
)


def facts_with(**changes: object) -> routing.Facts:
    return FACTS._replace(**changes)  # type: ignore[arg-type]


def decide(key: int, version: int, body: Message, **facts: object) -> routing.Decision:
    return routing.route(key, version, payload(key, version, body), facts_with(**facts))


def heartbeat() -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0)


def test_every_route_of_the_table_has_a_decider() -> None:
    assert set(routing.Route) == set(routing._DECIDERS)
    assert routing.ROUTES[ApiKey.CONSUMER_GROUP_HEARTBEAT] is routing.Route.GROUP
    assert routing.ROUTES[ApiKey.DESCRIBE_CONFIGS] is routing.Route.CONFIGS
    assert ApiKey.PRODUCE not in routing.ROUTES  # forwarded as it is


def test_group_requests_go_to_the_handler_decoded() -> None:
    decision = decide(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat())
    assert isinstance(decision, routing.CallHandler)
    assert decision.request.body == heartbeat()


def api_versions(name: str = "librdkafka", version: str = "2.16.1") -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name=name, client_software_version=version)


def test_api_versions_v3_names_are_checked_as_kafka_checks_them() -> None:
    """Kafka's ``ApiVersionsRequest.isValid``: from v3 the client's software name and version
    start and end with an ASCII letter or digit, with '-' and '.' between; else INVALID_REQUEST."""
    assert decide(ApiKey.API_VERSIONS, 3, api_versions("apache-kafka-java", "3.9.1")) == routing.AnswerApiVersions()
    assert decide(ApiKey.API_VERSIONS, 4, api_versions("a", "1")) == routing.AnswerApiVersions()
    for name, version in [("", "1"), ("lib rdkafka", "1"), ("-lib", "1"), ("lib", "2.16."), ("lïb", "1"), ("l", "1_0")]:
        assert decide(ApiKey.API_VERSIONS, 3, api_versions(name, version)) == routing.AnswerApiVersions(invalid=True)
    # Below v3 the body is empty and not read; above what is known, answered from v0 (KIP-511).
    assert routing.route(ApiKey.API_VERSIONS, 2, b"", FACTS) == routing.AnswerApiVersions()
    assert routing.route(ApiKey.API_VERSIONS, 99, b"\xff", FACTS) == routing.AnswerApiVersions()
    truncated = routing.route(ApiKey.API_VERSIONS, 3, payload(18, 3, api_versions())[:-4], FACTS)
    assert isinstance(truncated, routing.Close) and truncated.reason.startswith("malformed ApiVersions v3")


def test_only_the_authentication_apis_come_before_authentication() -> None:
    required = {"authentication_required": True, "authenticated": False}
    assert decide(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat(), **required) == routing.Close(
        f"API {ApiKey.CONSUMER_GROUP_HEARTBEAT} v0 before authentication"
    )
    assert isinstance(decide(ApiKey.METADATA, 12, MetadataRequest(), **required), routing.Close)
    assert decide(ApiKey.API_VERSIONS, 3, api_versions(), **required) == routing.AnswerApiVersions()
    assert routing.route(ApiKey.SASL_HANDSHAKE, 1, b"", facts_with(**required)) == routing.Sasl(True)
    authenticated = decide(
        ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat(), authentication_required=True, authenticated=True
    )
    assert isinstance(authenticated, routing.CallHandler)


def test_group_requests_beyond_the_limits_close_the_connection() -> None:
    big = decide(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat(), max_group_request_bytes=10)
    assert isinstance(big, routing.Close) and "exceeds max_group_request_bytes=10" in big.reason
    many = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=["a"] * 5)
    crowded = decide(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, many, max_group_request_elements=3)
    assert isinstance(crowded, routing.Close) and "max_group_request_elements=3" in crowded.reason
    assert decide(ApiKey.CONSUMER_GROUP_HEARTBEAT, 99, heartbeat()) == routing.Close(
        "unsupported version ConsumerGroupHeartbeat v99"
    )
    truncated = routing.route(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, payload(68, 0, heartbeat())[:-3], FACTS)
    assert isinstance(truncated, routing.Close) and truncated.reason.startswith("malformed ConsumerGroupHeartbeat")


def test_find_coordinator_for_groups_is_answered_here_and_for_transactions_forwarded() -> None:
    group = FindCoordinatorRequest(key_type=0, coordinator_keys=["g"])
    assert decide(ApiKey.FIND_COORDINATOR, 4, group) == routing.LocateGroups(group)
    transaction = FindCoordinatorRequest(key_type=1, coordinator_keys=["t"])
    assert decide(ApiKey.FIND_COORDINATOR, 4, transaction) == routing.Forward(rewrite=True)


def test_a_broker_port_lists_no_groups() -> None:
    assert decide(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(), broker_port=True) == routing.Answer(ListGroupsResponse())
    assert isinstance(decide(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()), routing.CallHandler)


def test_metadata_is_rewritten_and_marked_when_it_names_the_log_topic() -> None:
    named = MetadataRequest(topics=[MetadataRequestTopic(name=LOG)])
    assert decide(ApiKey.METADATA, 12, named) == routing.Forward(rewrite=True, named=frozenset({LOG}))
    assert decide(ApiKey.METADATA, 12, MetadataRequest(topics=None)) == routing.Forward(rewrite=True)


def test_produce_to_the_log_topic_is_split_or_closed_with_acks_0() -> None:
    def produce(topic: str, acks: int) -> ProduceRequest:
        return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequestTopicProduceData(name=topic)])

    assert decide(ApiKey.PRODUCE, 9, produce("orders", 1)) == routing.Forward()
    assert decide(ApiKey.PRODUCE, 9, produce("orders", 0)) == routing.Forward(expect=False)
    assert decide(ApiKey.PRODUCE, 9, produce(LOG, 1)) == routing.ForwardSplit()
    assert decide(ApiKey.PRODUCE, 9, produce(LOG, 0)) == routing.Close(
        "Produce with acks=0 to the coordinator's log topic"
    )


def test_apis_or_versions_the_cluster_does_not_offer_close_the_connection() -> None:
    ranges = {ApiKey.METADATA: (0, 12)}
    assert routing.route(ApiKey.PRODUCE, 9, b"", facts_with(cluster_ranges=ranges)) == routing.Close(
        f"unsupported API key {ApiKey.PRODUCE}"
    )
    assert routing.route(ApiKey.PRODUCE, 99, b"", FACTS) == routing.Close(
        f"unsupported version: API {ApiKey.PRODUCE} v99"
    )


def test_rewritten_requests_at_versions_the_cluster_does_not_offer_close_the_connection() -> None:
    """Metadata, DescribeCluster and FindCoordinator for transactions are forwarded (and their
    answers rewritten) only at versions ApiVersions offers, as every forwarded request: a client
    that skipped ApiVersions gets the connection closed, as from a broker."""
    from groupcoord.coordinator.messages.describe_cluster import DescribeClusterRequest

    ranges = {ApiKey.METADATA: (0, 9), ApiKey.DESCRIBE_CLUSTER: (0, 0), ApiKey.FIND_COORDINATOR: (0, 3)}
    assert decide(ApiKey.METADATA, 12, MetadataRequest(), cluster_ranges=ranges) == routing.Close(
        f"unsupported version: API {ApiKey.METADATA} v12"
    )
    assert decide(ApiKey.METADATA, 9, MetadataRequest(), cluster_ranges=ranges) == routing.Forward(rewrite=True)
    assert decide(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(), cluster_ranges=ranges) == routing.Close(
        f"unsupported version: API {ApiKey.DESCRIBE_CLUSTER} v1"
    )
    assert decide(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest(), cluster_ranges=ranges) == routing.Forward(
        rewrite=True
    )
    no_describe_cluster = {ApiKey.METADATA: (0, 9)}
    assert decide(
        ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest(), cluster_ranges=no_describe_cluster
    ) == routing.Close(f"unsupported API key {ApiKey.DESCRIBE_CLUSTER}")
    transaction = FindCoordinatorRequest(key_type=1, coordinator_keys=["t"])
    assert decide(ApiKey.FIND_COORDINATOR, 4, transaction, cluster_ranges=ranges) == routing.Close(
        f"unsupported version: API {ApiKey.FIND_COORDINATOR} v4"
    )
    # Groups are the sidecar's at every version it reads, whatever the cluster has.
    group = FindCoordinatorRequest(key_type=0, coordinator_keys=["g"])
    assert decide(ApiKey.FIND_COORDINATOR, 4, group, cluster_ranges=ranges) == routing.LocateGroups(group)


def test_config_requests_fall_back_to_the_forward_decision() -> None:
    request = DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=2, resource_name=LOG)])
    assert decide(ApiKey.DESCRIBE_CONFIGS, 4, request) == routing.Configs(fallback=routing.ForwardSplit())
    other = DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=2, resource_name="orders")])
    assert decide(ApiKey.DESCRIBE_CONFIGS, 4, other) == routing.Configs(fallback=routing.Forward())


def test_share_group_apis_are_served_only_when_share_groups_are() -> None:
    from groupcoord.coordinator.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

    request = ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=["t"])
    assert decide(ApiKey.SHARE_GROUP_HEARTBEAT, 1, request) == routing.Close("unsupported API ShareGroupHeartbeat")
    decision = decide(ApiKey.SHARE_GROUP_HEARTBEAT, 1, request, share_groups=True)
    assert isinstance(decision, routing.CallHandler)
    assert decision.request.body == request
    # The data path likewise: ShareFetch (78) and ShareAcknowledge (79) are the group handler's,
    # served only with share groups, on any port (clients send them to partition leaders).
    from groupcoord.coordinator.messages.share_fetch import ShareFetchRequest

    fetch = ShareFetchRequest(group_id="g", member_id="m", share_session_epoch=0)
    assert decide(ApiKey.SHARE_FETCH, 1, fetch) == routing.Close("unsupported API ShareFetch")
    served = decide(ApiKey.SHARE_FETCH, 1, fetch, share_groups=True)
    assert isinstance(served, routing.CallHandler) and served.request.body == fetch
    # v2 (Kafka 4.2: acquire modes, renew acknowledgements) is served too; v3 is not.
    served = decide(ApiKey.SHARE_FETCH, 2, fetch, share_groups=True)
    assert isinstance(served, routing.CallHandler) and served.request.body == fetch
    assert decide(ApiKey.SHARE_FETCH, 3, fetch, share_groups=True) == routing.Close("unsupported version ShareFetch v3")
