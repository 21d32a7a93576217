"""What the gateway does with one client request, decided from the request and the facts of its
connection alone: no sockets, no awaiting, no state changed (h11's rule for its state tables).

The connection acts on the decision (``gateway/connection.py``); this module only decides:

========================  ===============================================================
decision                  the connection then
========================  ===============================================================
``AnswerApiVersions``     answers from the cluster's versions merged with the gateway's
``Sasl``                  forwards the SASL step and watches its answer (``SaslSession``)
``Answer``                writes ``body`` as the answer, here
``LocateGroups``          answers a FindCoordinator for groups from the locator
``CallHandler``           hands the decoded request to the group handler
``Configs``               answers the GROUP resources here and forwards the rest
                          (``gateway/group_configs.py``), or, if it cannot, does ``fallback``
``Forward``               forwards the bytes (``rewrite``: decodes and rewrites the answer)
``ForwardSplit``          refuses the request's protected topics, forwards the rest
``Close``                 closes the connection (``reason`` is logged), as a broker does
========================  ===============================================================

The first step is a table (``ROUTES``: API key -> route); each route then has one decider.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from groupcoord.coordinator.gateway.apis import APIS, GROUP_API_KEYS, SHARE_GROUP_API_KEYS, ApiKey
from groupcoord.coordinator.gateway.codec import CodecError
from groupcoord.coordinator.gateway.configs import CONFIG_API_KEYS
from groupcoord.coordinator.gateway.framing import FrameError, produce_acks
from groupcoord.coordinator.gateway.limits import count_elements
from groupcoord.coordinator.gateway.protect import NotForwardable, ProtectedTopics
from groupcoord.coordinator.gateway.protocol import Request, decode_request
from groupcoord.coordinator.gateway.rewrite import SERVED_LOCALLY, forwarded_range, served_versions
from groupcoord.coordinator.gateway.topic_split import DESCRIBE_TOPIC_PARTITIONS
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.coordinator.messages.list_groups import ListGroupsResponse
from groupcoord.coordinator.messages.schema import Message

_GROUP_KEY_TYPE = 0
# The highest version of each locally served API that ApiVersions offers (TxnOffsetCommit: v4, or
# v5 in front of a cluster at transaction version 2; ShareFetch/ShareAcknowledge: v2).
_SERVED_MAX = {key: high for key, (_, high) in served_versions(share_groups=True).items()}
_SERVED_MAX_TV2 = {key: high for key, (_, high) in served_versions(share_groups=True, transaction_v2=True).items()}


# --- the facts a decision is taken on -------------------------------------------------------


class Facts(NamedTuple):
    """What the decision needs beyond the request: the connection's session and the gateway's
    limits and knowledge, as values (a tuple: built for every request, on the forward path)."""

    authentication_required: bool
    authenticated: bool
    max_group_request_bytes: int
    max_group_request_elements: int
    # The connection came in on a per-broker port (not the bootstrap/coordinator port).
    broker_port: bool
    protected: ProtectedTopics
    # The cluster's API version ranges as last seen (None: not known yet).
    cluster_ranges: dict[int, tuple[int, int]] | None
    # Share-group membership is served (``GatewayConfig.share_groups_enabled``).
    share_groups: bool = False
    # The cluster finalizes transaction version 2 (``rewrite.transaction_v2``): TxnOffsetCommit v5.
    transaction_v2: bool = False
    # How a group request is decoded: ``decode_request``, or the connection's memo of its last
    # heartbeat (``protocol.RequestMemo``): the same bytes decode to the same request.
    decode: Callable[[bytes | bytearray], Request] = decode_request


# --- decisions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnswerApiVersions:
    # INVALID_REQUEST: a v3+ request whose client software name or version Kafka would refuse.
    invalid: bool = False


@dataclass(frozen=True, slots=True)
class Sasl:
    handshake: bool  # SaslHandshake; False: SaslAuthenticate


@dataclass(frozen=True, slots=True)
class Answer:
    body: Message


@dataclass(frozen=True, slots=True)
class LocateGroups:
    request: FindCoordinatorRequest


@dataclass(frozen=True, slots=True)
class CallHandler:
    request: Request


@dataclass(frozen=True, slots=True)
class Forward:
    rewrite: bool = False
    # The protected topics a Metadata request names (by name or id): the rewritten answer refuses them.
    named: frozenset[str | uuid.UUID] = frozenset()
    # False: no answer comes (Produce with acks=0).
    expect: bool = True


@dataclass(frozen=True, slots=True)
class ForwardSplit:
    pass


@dataclass(frozen=True, slots=True)
class Close:
    reason: str


@dataclass(frozen=True, slots=True)
class Configs:
    # What to do if the configs path does not take the request (it names no group, or is a
    # version or shape the gateway does not decode).
    fallback: Forward | ForwardSplit | Close


Decision = AnswerApiVersions | Sasl | Answer | LocateGroups | CallHandler | Configs | Forward | ForwardSplit | Close


class Route(Enum):
    API_VERSIONS = "api_versions"
    SASL_HANDSHAKE = "sasl_handshake"
    SASL_AUTHENTICATE = "sasl_authenticate"
    GROUP = "group"  # answered here (the group APIs, FindCoordinator for groups)
    REWRITTEN = "rewritten"  # forwarded, the answer's addresses rewritten
    CONFIGS = "configs"  # GROUP resources here, the rest forwarded
    FORWARDED = "forwarded"  # the bytes forwarded as they are


ROUTES: dict[int, Route] = {
    ApiKey.API_VERSIONS: Route.API_VERSIONS,
    ApiKey.SASL_HANDSHAKE: Route.SASL_HANDSHAKE,
    ApiKey.SASL_AUTHENTICATE: Route.SASL_AUTHENTICATE,
    ApiKey.FIND_COORDINATOR: Route.GROUP,
    **dict.fromkeys(GROUP_API_KEYS, Route.GROUP),
    ApiKey.METADATA: Route.REWRITTEN,
    ApiKey.DESCRIBE_CLUSTER: Route.REWRITTEN,
    **dict.fromkeys(CONFIG_API_KEYS, Route.CONFIGS),
}
# Routes served before (or without) authentication: how a client gets to authenticate at all.
BEFORE_AUTHENTICATION: frozenset[Route] = frozenset({Route.API_VERSIONS, Route.SASL_HANDSHAKE, Route.SASL_AUTHENTICATE})


def route(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    """The decision for one request whose header reads ``key`` and ``version``."""
    decide, before_authentication = _DECIDE.get(key, _DECIDE_FORWARDED)
    if not before_authentication and facts.authentication_required and not facts.authenticated:
        # What a Kafka broker does with any other request before (or after an expired)
        # authentication: close the connection.
        return Close(f"API {key} v{version} before authentication")
    return decide(key, version, payload, facts)


# Kafka's rule for ApiVersions v3+'s ClientSoftwareName and ClientSoftwareVersion
# (``ApiVersionsRequest.isValid``): ASCII letters and digits at both ends, '-' and '.' between.
_SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?")


def _api_versions(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    if version < 3 or not APIS[key].supports(version):
        # Nothing to check below v3; a version not known here is answered from a v0 body
        # (KIP-511) whatever it carries, so the client can retry with one that is.
        return AnswerApiVersions()
    try:
        body = decode_request(payload).body
    except (CodecError, FrameError) as exc:
        # As a broker does with a request it cannot parse.
        return Close(f"malformed ApiVersions v{version}: {exc}")
    assert isinstance(body, ApiVersionsRequest)
    valid = _SOFTWARE_NAME_OR_VERSION.fullmatch
    return AnswerApiVersions(invalid=not (valid(body.client_software_name) and valid(body.client_software_version)))


def _sasl_handshake(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    return Sasl(handshake=True)


def _sasl_authenticate(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    return Sasl(handshake=False)


def _group(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    spec = APIS[key]
    served = key in SERVED_LOCALLY or (facts.share_groups and key in SHARE_GROUP_API_KEYS)
    if not served and key != ApiKey.FIND_COORDINATOR:
        # Not offered in ApiVersions (the share-group APIs unless share groups are): as a broker
        # does with an API it does not expose.
        return Close(f"unsupported API {spec.name}")
    served_max = _SERVED_MAX_TV2 if facts.transaction_v2 else _SERVED_MAX
    if not spec.supports(version) or version > served_max.get(key, version):
        return Close(f"unsupported version {spec.name} v{version}")
    limit_bytes = facts.max_group_request_bytes
    if len(payload) > limit_bytes:
        return Close(f"{spec.name} of {len(payload)} bytes exceeds max_group_request_bytes={limit_bytes}")
    try:
        request = facts.decode(payload)
    except CodecError as exc:
        return Close(f"malformed {spec.name} v{version}: {exc}")
    limit = facts.max_group_request_elements
    if count_elements(request.body, limit) > limit:
        return Close(f"{spec.name} v{version} carries more than max_group_request_elements={limit} array elements")
    if key == ApiKey.LIST_GROUPS and facts.broker_port:
        # A node lists only the groups it coordinates, and admin clients ask every node and
        # merge the answers; a broker port coordinates none, so each group is listed once (by
        # the coordinator port).
        return Answer(ListGroupsResponse())
    if key == ApiKey.FIND_COORDINATOR:
        assert isinstance(request.body, FindCoordinatorRequest)
        if version == 0 or request.body.key_type == _GROUP_KEY_TYPE:
            return LocateGroups(request.body)
        # Transaction coordinators are the cluster's: at a version it offers only.
        return _not_offered(key, version, facts) or Forward(rewrite=True)
    return CallHandler(request)


def _rewritten(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    spec = APIS[key]
    if not spec.supports(version):
        return Close(f"{spec.name} v{version} is beyond what the gateway can rewrite")
    # As any forwarded request: a client that skipped ApiVersions (kcat with
    # api.version.request=false, raw tools) may send a version the cluster lacks.
    refused = _not_offered(key, version, facts)
    if refused is not None:
        return refused
    # A request that names the protected topic gets TOPIC_AUTHORIZATION_FAILED for it; in any
    # other answer (all topics) it is left out. Decoded as a broker reads it: clients send bytes
    # no schema declares after the message (librdkafka's Metadata v12 ends with three), and
    # brokers ignore them.
    protected = facts.protected
    try:
        named = protected.in_metadata(payload, version) if key == ApiKey.METADATA and protected else frozenset()
    except NotForwardable as exc:
        return Close(str(exc))
    return Forward(rewrite=True, named=named)


def _configs(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    fallback = _forwarded(key, version, payload, facts)
    assert isinstance(fallback, Forward | ForwardSplit | Close)
    return Configs(fallback)


def _not_offered(key: int, version: int, facts: Facts) -> Close | None:
    """Close, unless ApiVersions offers ``key`` at ``version`` (the cluster's versions as far as the
    gateway reads them: ``forwarded_range``): only that is forwarded, whether or not the client
    asked ApiVersions, and anything else closes the connection, as a Kafka broker closes it for an
    API (or version) it does not expose. Unknown cluster versions leave what the gateway reads."""
    known = facts.cluster_ranges
    offered = forwarded_range(key, known.get(key) if known is not None else (0, 0x7FFF))
    if offered is None:
        return Close(f"unsupported API key {key}")
    if not offered[0] <= version <= offered[1]:
        return Close(f"unsupported version: API {key} v{version}")
    return None


def _forwarded(key: int, version: int, payload: bytes | bytearray, facts: Facts) -> Decision:
    refused = _not_offered(key, version, facts)
    if refused is not None:
        return refused
    protected = facts.protected
    expect = True
    if key == ApiKey.PRODUCE:
        try:
            expect = produce_acks(payload, version) != 0
            names_protected = bool(protected) and protected.in_produce(payload, version)
        except CodecError as exc:
            return Close(f"malformed Produce v{version}: {exc}")
        if names_protected and not expect:
            # What Kafka does with an acks=0 produce that fails: close, so the producer notices.
            return Close("Produce with acks=0 to the coordinator's log topic")
    elif key == DESCRIBE_TOPIC_PARTITIONS:
        # Answers list topics not named in the request: always filtered.
        names_protected = bool(protected)
    elif protected:
        try:
            names_protected = protected.in_request(payload, key, version)
        except NotForwardable as exc:
            return Close(str(exc))
    else:
        names_protected = False
    if names_protected:
        return _FORWARD_SPLIT
    return _FORWARD if expect else _FORWARD_NO_ANSWER


# The forward path's decisions, made once (values: nothing in them differs between requests).
_FORWARD = Forward()
_FORWARD_NO_ANSWER = Forward(expect=False)
_FORWARD_SPLIT = ForwardSplit()


_DECIDERS: dict[Route, Callable[[int, int, bytes | bytearray, Facts], Decision]] = {
    Route.API_VERSIONS: _api_versions,
    Route.SASL_HANDSHAKE: _sasl_handshake,
    Route.SASL_AUTHENTICATE: _sasl_authenticate,
    Route.GROUP: _group,
    Route.REWRITTEN: _rewritten,
    Route.CONFIGS: _configs,
    Route.FORWARDED: _forwarded,
}
# ``ROUTES`` and ``_DECIDERS`` resolved once per API key: (its decider, whether it is served
# before authentication). Hashing a ``Route`` (an Enum: its ``__hash__`` is Python code) twice per
# request was a visible part of routing a steady heartbeat.
_DECIDE = {key: (_DECIDERS[kind], kind in BEFORE_AUTHENTICATION) for key, kind in ROUTES.items()}
_DECIDE_FORWARDED = (_DECIDERS[Route.FORWARDED], Route.FORWARDED in BEFORE_AUTHENTICATION)
