"""Nothing a client sends is dropped between the wire and the group logic.

Each group API's request is filled with a non-default value in every field its version carries,
encoded, decoded by the gateway's codec and handed to the real edge (``CoordinatorApiHandler``).
A recording service stands where the group logic's service would be: it must receive the decoded
request itself (same object, so no field can be lost by a copy), or, for the offset APIs whose
topics the edge resolves, every field unchanged but the resolved topic name and id. What came with
the request rather than in it (version, client id, client host, a nonce) must arrive in the
``RequestContext``, and the service's answer must be what the client gets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from collections.abc import Collection
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import ConnectionContext as WireContext
from groupcoord.coordinator.gateway.protocol import decode_request, encode_request
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.groups.group_config import ConfigChange
from groupcoord.coordinator.messages import (
    alter_configs,
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    heartbeat,
    incremental_alter_configs,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from groupcoord.coordinator.messages.schema import Field, Message, Struct
from groupcoord.coordinator.service.gateway_handler import CoordinatorApiHandler
from groupcoord.coordinator.service.metadata_cache import TopicInfo

CLIENT_ID, CLIENT_HOST = "client-7", "10.1.2.3"
_INTS = {"int8": 2**7 - 1, "int16": 2**15 - 1, "int32": 2**31 - 1, "int64": 2**63 - 1, "uint16": 2**16 - 1}


def filled(cls: type[Struct], version: int, counter: itertools.count[int] | None = None) -> Any:
    """An instance with a value other than the default in every field ``version`` carries."""
    counter = counter if counter is not None else itertools.count(1)
    obj = cls()
    for f in cls.SCHEMA:
        if version in f.versions:
            setattr(obj, f.name, _value(f, version, counter))
            assert getattr(obj, f.name) != f.default, (cls.__name__, f.name)
    return obj


def _primitive(kind: str, name: str, counter: itertools.count[int]) -> Any:
    n = next(counter)
    if kind in _INTS:
        return min(n + 1000, _INTS[kind])  # distinct per field, never a schema default (-1, 0)
    if kind == "bool":
        return True  # no group API field defaults to true
    if kind == "string":
        return f"{name}-{n}"
    if kind == "bytes":
        return f"{name}-{n}".encode()
    if kind == "uuid":
        return uuid.uuid5(uuid.NAMESPACE_OID, f"{name}-{n}")
    raise AssertionError(kind)


def _value(f: Field, version: int, counter: itertools.count[int]) -> Any:
    if f.kind == "array":
        if f.struct is not None:
            return [filled(f.struct, version, counter) for _ in range(2)]
        return [_primitive(f.item, f.name, counter) for _ in range(2)]
    if f.kind == "struct":
        assert f.struct is not None
        return filled(f.struct, version, counter)
    return _primitive(f.kind, f.name, counter)


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


class Topics:
    """Every topic exists, with many partitions: a name resolves to a derived id and back."""

    @staticmethod
    def id_of_name(name: str) -> uuid.UUID:
        return uuid.uuid5(uuid.NAMESPACE_URL, name)

    async def lookup(self, name: str, topic_id: uuid.UUID | None) -> TopicInfo | None:
        if topic_id is not None:
            return TopicInfo(f"named-{topic_id}", topic_id, 2**31 - 1)
        return TopicInfo(name, self.id_of_name(name), 2**31 - 1)

    def refresh_soon(self, names: Collection[str] = (), regex: bool = False) -> asyncio.Task[None]:
        return asyncio.ensure_future(asyncio.sleep(0))

    def knows(self, name: str) -> bool:
        return True

    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        return f"named-{topic_id}"

    async def id_of(self, name: str) -> str | None:
        return None

    async def uuid_of(self, name: str) -> uuid.UUID | None:
        return self.id_of_name(name)


class RecordingService:
    """Where the group logic's service stands: records its calls, answers with canned values."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.answers: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        async def call(*args: Any) -> Any:
            self.calls.append((name, args))
            return self.answers[name](*args)

        return call


def _through_the_gateway(body: Message, version: int) -> tuple[WireContext, Message]:
    """The request as the gateway hands it to its handler: encoded, framed, decoded."""
    header = RequestHeader(body.API_KEY, version, 42, CLIENT_ID)
    decoded = decode_request(encode_request(header, body)[4:])
    return WireContext(decoded.header, CLIENT_HOST, 50_000, 9092), decoded.body


def _run(service: RecordingService, body: Message, version: int) -> tuple[Any, Any]:
    context, decoded = _through_the_gateway(body, version)
    assert decoded == body  # every field the version carries survived the codec
    handler = CoordinatorApiHandler(service, Topics())  # type: ignore[arg-type]  # a stand-in service
    response = asyncio.run(handler.handle(context, decoded))
    return decoded, response


def _assert_facts(facts: Any, version: int) -> None:
    assert isinstance(facts, RequestContext)
    assert (facts.api_version, facts.client_id, facts.client_host) == (version, CLIENT_ID, f"/{CLIENT_HOST}")
    assert len(facts.nonce) == 16


# Request class, its version, the service method, and the answer the service gives.
PASSED_AS_IS = [
    (join_group.JoinGroupRequest, 9, "join_group", join_group.JoinGroupResponse(member_id="m", protocol_name="p")),
    (join_group.JoinGroupRequest, 5, "join_group", join_group.JoinGroupResponse(member_id="m", protocol_name="p")),
    (sync_group.SyncGroupRequest, 5, "sync_group", sync_group.SyncGroupResponse(assignment=b"a")),
    (heartbeat.HeartbeatRequest, 4, "heartbeat", heartbeat.HeartbeatResponse(error_code=27)),
    (leave_group.LeaveGroupRequest, 5, "leave_group", leave_group.LeaveGroupResponse(error_code=25)),
    (leave_group.LeaveGroupRequest, 2, "leave_group", leave_group.LeaveGroupResponse(error_code=25)),
    (
        consumer_group_heartbeat.ConsumerGroupHeartbeatRequest,
        1,
        "consumer_group_heartbeat",
        consumer_group_heartbeat.ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3),
    ),
    (offset_delete.OffsetDeleteRequest, 0, "delete_offsets", offset_delete.OffsetDeleteResponse(error_code=69)),
]


@pytest.mark.parametrize(("cls", "version", "method", "answer"), PASSED_AS_IS)
def test_the_logic_gets_the_decoded_request_itself(cls: type[Message], version: int, method: str, answer: Any) -> None:
    service = RecordingService()
    service.answers[method] = lambda *args: answer
    decoded, response = _run(service, filled(cls, version), version)
    [(name, args)] = service.calls
    assert name == method and args[0] is decoded
    if len(args) > 1:
        _assert_facts(args[1], version)
    assert response is answer


@pytest.mark.parametrize("version", [4, 9, 10])
def test_an_offset_commit_reaches_the_logic_whole_with_its_topics_resolved(version: int) -> None:
    body = filled(offset_commit.OffsetCommitRequest, version)
    service = RecordingService()
    service.answers["commit_offsets"] = lambda request, facts: offset_commit.OffsetCommitResponse(
        topics=[
            offset_commit.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    offset_commit.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=i + 1)
                    for i, p in enumerate(t.partitions)
                ],
            )
            for t in request.topics
        ]
    )
    decoded, response = _run(service, body, version)
    [(_, (request, facts))] = service.calls
    _assert_facts(facts, version)
    # Every field but the topics' identity, which the edge resolves once: by id from v10, else by name.
    assert _fields(replace(request, topics=[])) == _fields(replace(decoded, topics=[]))
    assert len(request.topics) == len(decoded.topics) == 2
    for sent, got in zip(decoded.topics, request.topics, strict=True):
        assert got.partitions == sent.partitions
        if version >= 10:
            assert (got.name, got.topic_id) == (f"named-{sent.topic_id}", sent.topic_id)
        else:
            assert (got.name, got.topic_id) == (sent.name, Topics.id_of_name(sent.name))
    # The answer names each topic as the request did, with the logic's code per partition.
    assert isinstance(response, offset_commit.OffsetCommitResponse)
    assert [(t.name, t.topic_id) for t in response.topics] == [(t.name, t.topic_id) for t in decoded.topics]
    assert [[(p.partition_index, p.error_code) for p in t.partitions] for t in response.topics] == [
        [(p.partition_index, i + 1) for i, p in enumerate(t.partitions)] for t in decoded.topics
    ]


@pytest.mark.parametrize("version", [8, 9, 10])
def test_an_offset_fetch_reaches_the_logic_whole_with_its_topics_resolved(version: int) -> None:
    body = filled(offset_fetch.OffsetFetchRequest, version)
    service = RecordingService()
    service.answers["fetch_offsets"] = lambda groups, require_stable: [
        offset_fetch.OffsetFetchResponseGroup(group_id=g.group_id, error_code=i + 1) for i, g in enumerate(groups)
    ]
    decoded, response = _run(service, body, version)
    [(_, (groups, require_stable))] = service.calls
    assert require_stable == decoded.require_stable  # UNSTABLE_OFFSET_COMMIT needs it
    assert len(groups) == len(decoded.groups) == 2
    for sent, got in zip(decoded.groups, groups, strict=True):
        assert _fields(replace(got, topics=[])) == _fields(replace(sent, topics=[]))
        for sent_topic, got_topic in zip(sent.topics, got.topics, strict=True):
            assert got_topic.partition_indexes == sent_topic.partition_indexes
            if version >= 10:
                assert (got_topic.name, got_topic.topic_id) == (f"named-{sent_topic.topic_id}", sent_topic.topic_id)
            else:
                assert (got_topic.name, got_topic.topic_id) == (sent_topic.name, Topics.id_of_name(sent_topic.name))
    assert isinstance(response, offset_fetch.OffsetFetchResponse)
    assert [(g.group_id, g.error_code) for g in response.groups] == [(g.group_id, i + 1) for i, g in enumerate(groups)]


def test_an_offset_fetch_before_v8_reaches_the_logic_as_a_one_group_batch() -> None:
    body = filled(offset_fetch.OffsetFetchRequest, 7)
    service = RecordingService()
    service.answers["fetch_offsets"] = lambda groups, require_stable: [
        offset_fetch.OffsetFetchResponseGroup(error_code=16)
    ]
    decoded, response = _run(service, body, 7)
    [(_, ([group], require_stable))] = service.calls
    assert require_stable == decoded.require_stable
    assert group.group_id == decoded.group_id
    assert [(t.name, t.partition_indexes) for t in group.topics] == [
        (t.name, t.partition_indexes) for t in decoded.topics
    ]
    assert isinstance(response, offset_fetch.OffsetFetchResponse) and response.error_code == 16


def test_the_admin_apis_hand_their_lists_on_whole() -> None:
    service = RecordingService()
    listed = GroupSummary("g", "consumer", "Stable", "classic")
    service.answers["list_groups"] = lambda states, types: (0, [listed])
    service.answers["describe_groups"] = lambda ids, version: [describe_groups.DescribeGroupsResponseDescribedGroup()]
    service.answers["delete_groups"] = lambda ids: [(g, 0) for g in ids]
    service.answers["consumer_group_describe"] = lambda ids: [
        consumer_group_describe.ConsumerGroupDescribeResponseDescribedGroup()
    ]
    cases: list[tuple[Any, int]] = [
        (filled(list_groups.ListGroupsRequest, 5), 5),
        (filled(describe_groups.DescribeGroupsRequest, 5), 5),
        (filled(delete_groups.DeleteGroupsRequest, 2), 2),
        (filled(consumer_group_describe.ConsumerGroupDescribeRequest, 0), 0),
    ]
    responses = [_run(service, body, version)[1] for body, version in cases]
    lists, describe, delete, cg_describe = cases[0][0], cases[1][0], cases[2][0], cases[3][0]
    assert service.calls == [
        ("list_groups", (lists.states_filter, lists.types_filter)),
        ("describe_groups", (describe.groups, 5)),
        ("delete_groups", (delete.groups_names,)),
        ("consumer_group_describe", (cg_describe.group_ids,)),
    ]
    # The service's rows are the answer's entries (``GroupSummary`` is a ListGroups entry).
    groups = responses[0].groups
    assert all(isinstance(g, list_groups.ListGroupsResponseListedGroup) for g in groups)
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in groups] == [
        ("g", "consumer", "Stable", "classic")
    ]


def test_a_join_group_before_v7_never_answers_a_null_protocol_name() -> None:
    service = RecordingService()
    service.answers["join_group"] = lambda request, facts: join_group.JoinGroupResponse(protocol_name=None)
    _, response = _run(service, filled(join_group.JoinGroupRequest, 6), 6)
    assert isinstance(response, join_group.JoinGroupResponse) and response.protocol_name == ""
    _, response = _run(service, filled(join_group.JoinGroupRequest, 7), 7)
    assert isinstance(response, join_group.JoinGroupResponse) and response.protocol_name is None


def test_both_config_alter_apis_refuse_a_malformed_group_alike_and_pass_the_rest_on() -> None:
    """IncrementalAlterConfigs hands its operations on, the legacy AlterConfigs its whole set;
    both refuse an empty group name and a key named twice before the logic sees anything."""
    service = RecordingService()
    service.answers["alter_group_config"] = lambda name, changes, replacement, validate_only: (42, f"for {name}")
    groups: list[tuple[str, list[tuple[str, int, str | None]]]] = [
        ("", [("a", 0, "1")]),
        ("twice", [("a", 0, "1"), ("a", 1, None)]),
        ("g", [("a", 0, "1"), ("b", 1, None)]),
    ]
    iac = incremental_alter_configs
    incremental = iac.IncrementalAlterConfigsRequest(
        resources=[
            iac.IncrementalAlterConfigsRequestAlterConfigsResource(
                resource_type=32,
                resource_name=name,
                configs=[
                    iac.IncrementalAlterConfigsRequestAlterableConfig(name=k, config_operation=op, value=v)
                    for k, op, v in keys
                ],
            )
            for name, keys in groups
        ],
        validate_only=True,
    )
    legacy = alter_configs.AlterConfigsRequest(
        resources=[
            alter_configs.AlterConfigsResource(
                resource_type=32,
                resource_name=name,
                configs=[alter_configs.AlterConfigsRequestAlterableConfig(name=k, value=v) for k, _, v in keys],
            )
            for name, keys in groups
        ],
    )
    answers = [
        (ErrorCode.INVALID_REQUEST, "Group name must not be empty.", 32, ""),
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys", 32, "twice"),
        (42, "for g", 32, "g"),
    ]
    for body, version in ((incremental, 1), (legacy, 2)):
        _, response = _run(service, body, version)
        assert [
            (r.error_code, r.error_message, r.resource_type, r.resource_name) for r in response.responses
        ] == answers
    assert service.calls == [
        ("alter_group_config", ("g", [ConfigChange("a", 0, "1"), ConfigChange("b", 1, None)], None, True)),
        ("alter_group_config", ("g", None, [("a", "1"), ("b", None)], False)),
    ]
