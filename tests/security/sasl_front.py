"""TEST FIXTURE: a SASL-enforcing front for the local broker (which cannot enforce SASL with memory storage).

Behaves like Kafka's SaslServerAuthenticator on the wire: before authentication only ApiVersions,
SaslHandshake (v1) and SaslAuthenticate are accepted, and any other request closes the connection;
PLAIN and SCRAM-SHA-256/512 (verified with ``scramp``) and OAUTHBEARER (unsecured JWTs) are offered;
a failed SaslAuthenticate is answered with SASL_AUTHENTICATION_FAILED and the connection is closed.
A refused OAUTHBEARER token is answered as Kafka's OAuthBearerSaslServer answers it: a JSON error
with error 0, then SASL_AUTHENTICATION_FAILED once the client sends its lone kvsep (byte 0x01).
After authentication, every request is relayed byte for byte to the broker behind it. It also
records which principal sent which API, so tests can see what reached the "cluster" and as whom.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from scramp import ScramMechanism

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import decode_request_header, peek_request, produce_acks
from groupcoord.coordinator.gateway.protocol import decode_response, encode_response
from groupcoord.coordinator.messages.api_versions import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ApiVersionsResponseFinalizedFeatureKey,
)
from groupcoord.coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupcoord.coordinator.messages.schema import Field, Struct, Versions
from groupcoord.local_broker import broker_binary, free_port
from tests.processes import popen

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, PRODUCE, DESCRIBE_ACLS = 18, 17, 36, 0, 29
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM = 58, 33


class _Close(Exception):
    pass


# DescribeAcls (API 29) answer bodies, from the published schema, so the front can play a cluster
# with an authorizer: the ACLs are whatever the test puts in ``SaslFront.acls``.
@dataclass(kw_only=True, slots=True)
class _AclDescription(Struct):
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("principal", "string", Versions(0)),
        Field("host", "string", Versions(0)),
        Field("operation", "int8", Versions(0)),
        Field("permission_type", "int8", Versions(0)),
    )


@dataclass(kw_only=True, slots=True)
class _AclResource(Struct):
    resource_type: int = 0
    resource_name: str = ""
    pattern_type: int = 3
    acls: list[_AclDescription] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", "int8", Versions(0)),
        Field("resource_name", "string", Versions(0)),
        Field("pattern_type", "int8", Versions(1), default=3),
        Field("acls", "array", Versions(0), struct=_AclDescription),
    )


@dataclass(kw_only=True, slots=True)
class _DescribeAclsResponse(Struct):
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    resources: list[_AclResource] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0)),
        Field("error_code", "int16", Versions(0)),
        Field("error_message", "string", Versions(0), nullable=Versions(0)),
        Field("resources", "array", Versions(0), struct=_AclResource),
    )


_RESOURCE = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4}
_PATTERN = {"LITERAL": 3, "PREFIXED": 4}
_OPERATION = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8}
_PERMISSION = {"DENY": 2, "ALLOW": 3}


@dataclass
class SaslFront:
    listen_port: int
    broker: tuple[str, int]
    users: dict[str, str]
    # (principal or None, api key) for every request that reached the broker behind the front.
    seen: list[tuple[str | None, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    # ACLs served by DescribeAcls: (resource_type, name, pattern, principal, host, operation, permission).
    acls: list[tuple[str, str, str, str, str, str, str]] = field(default_factory=list)
    # KIP-368 session lifetimes (ms) handed to some users (or token subjects) at authentication.
    lifetimes: dict[str, int] = field(default_factory=dict)
    # OAUTHBEARER token subjects refused (as a token Kafka's validator rejects), and client ids
    # whose OAUTHBEARER logins are refused (a rejected token on just those connections).
    refused_subjects: set[str] = field(default_factory=set)
    refused_clients: set[str] = field(default_factory=set)
    # Relay requests of connections that did not authenticate (principal None): a plain relay.
    anonymous: bool = False
    # Play a cluster that finalizes this transaction.version (0: report none). At 2, Produce is
    # offered up to v12, which the local broker (Tansu 0.6) takes as v11 (it advertises v11).
    transaction_version: int = 0
    # (principal, client id, api key, version) of every request relayed to the broker.
    requests: list[tuple[str | None, str | None, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._scram: dict[str, ScramMechanism] = {m: ScramMechanism(m) for m in MECHANISMS if m.startswith("SCRAM")}
        self._auth_info: dict[tuple[str, str], Any] = {
            (mech, user): self._scram[mech].make_auth_info(password, iteration_count=4096)
            for mech in self._scram
            for user, password in self.users.items()
        }
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="sasl-front", daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> SaslFront:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.listen_port)

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        principal: str | None = None
        mechanism: str | None = None
        client_id: str | None = None
        scram_server: Any = None
        oauth_refusal: str | None = None
        try:
            while True:
                try:
                    prefix = await reader.readexactly(4)
                    payload = await reader.readexactly(struct.unpack(">i", prefix)[0])
                except asyncio.IncompleteReadError:
                    return
                key, version, correlation_id = peek_request(payload)
                if key == SASL_HANDSHAKE:
                    header, pos = decode_request_header(payload, 1)
                    client_id = header.client_id
                    chosen = decode_struct(SaslHandshakeRequest, memoryview(payload)[pos:], version, False).mechanism
                    ok = chosen in MECHANISMS
                    mechanism = chosen if ok else None
                    body = SaslHandshakeResponse(
                        error_code=0 if ok else UNSUPPORTED_SASL_MECHANISM, mechanisms=list(MECHANISMS)
                    )
                    writer.write(_frame(correlation_id, SaslHandshakeResponse, version, body, False))
                    await writer.drain()
                    continue
                if key == SASL_AUTHENTICATE:
                    flexible = version >= 2
                    _, pos = decode_request_header(payload, 2 if flexible else 1)
                    token = decode_struct(SaslAuthenticateRequest, memoryview(payload)[pos:], version, flexible)
                    if mechanism == "OAUTHBEARER" and oauth_refusal is not None and token.auth_bytes == b"\x01":
                        reply, done, who = self._refuse(oauth_refusal)
                    else:
                        reply, done, who = self._authenticate(mechanism, token.auth_bytes, scram_server)
                        if mechanism == "OAUTHBEARER" and done and client_id in self.refused_clients:
                            error = json.dumps({"status": "invalid_token"}).encode()
                            reply, done, who = SaslAuthenticateResponse(auth_bytes=error), False, None
                    oauth_refusal = None
                    if mechanism == "OAUTHBEARER" and not reply.error_code and not done:
                        oauth_refusal = reply.auth_bytes.decode()
                    if isinstance(who, tuple):  # SCRAM: the server object for the next step
                        scram_server, who = who
                    writer.write(_frame(correlation_id, SaslAuthenticateResponse, version, reply, flexible))
                    await writer.drain()
                    if reply.error_code:
                        self.failures.append(reply.error_message or "")
                        return  # Kafka closes the connection after a failed authentication
                    if done:
                        principal = who
                    continue
                if key != API_VERSIONS and principal is None and not self.anonymous:
                    return  # like Kafka: any other request before authentication closes the connection
                if key == DESCRIBE_ACLS:
                    self.seen.append((principal, key))
                    writer.write(self._describe_acls(correlation_id, version))
                    await writer.drain()
                    continue
                if upstream is None:
                    upstream = await asyncio.open_connection(*self.broker)
                self.seen.append((principal, key))
                self.requests.append((principal, decode_request_header(payload, 1)[0].client_id, key, version))
                up_reader, up_writer = upstream
                up_writer.write(prefix + payload)
                await up_writer.drain()
                if key == PRODUCE and produce_acks(payload, version) == 0:
                    continue
                answer_prefix = await up_reader.readexactly(4)
                answer = await up_reader.readexactly(struct.unpack(">i", answer_prefix)[0])
                if key == API_VERSIONS:
                    writer.write(_with_sasl_apis(answer, version, self.transaction_version))
                else:
                    writer.write(answer_prefix + answer)
                await writer.drain()
        except (ConnectionError, _Close):
            return
        finally:
            if upstream is not None:
                upstream[1].close()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _describe_acls(self, correlation_id: int, version: int) -> bytes:
        resources: dict[tuple[str, str, str], _AclResource] = {}
        for rtype, name, pattern, who, host, operation, permission in self.acls:
            resource = resources.setdefault(
                (rtype, name, pattern),
                _AclResource(resource_type=_RESOURCE[rtype], resource_name=name, pattern_type=_PATTERN[pattern]),
            )
            resource.acls.append(
                _AclDescription(
                    principal=who, host=host, operation=_OPERATION[operation], permission_type=_PERMISSION[permission]
                )
            )
        body = _DescribeAclsResponse(resources=list(resources.values()))
        return _frame(correlation_id, _DescribeAclsResponse, version, body, version >= 2)

    @staticmethod
    def _refuse(message: str) -> tuple[SaslAuthenticateResponse, bool, Any]:
        return SaslAuthenticateResponse(error_code=SASL_AUTHENTICATION_FAILED, error_message=message), False, None

    def _authenticate(
        self, mechanism: str | None, token: bytes, scram_server: Any
    ) -> tuple[SaslAuthenticateResponse, bool, Any]:
        refuse = self._refuse

        if mechanism is None:
            return refuse("no SASL mechanism chosen")
        if mechanism == "PLAIN":
            parts = token.decode("utf-8", "replace").split("\x00")
            if len(parts) == 3 and self.users.get(parts[1]) == parts[2] and parts[0] in ("", parts[1]):
                return SaslAuthenticateResponse(session_lifetime_ms=self.lifetimes.get(parts[1], 0)), True, parts[1]
            return refuse("Authentication failed: Invalid username or password")
        if mechanism == "OAUTHBEARER":
            # Unsecured JWTs (alg "none"), as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
            # accepts them in tests: any token with a "sub" claim, no "bad" claim and a subject
            # not refused. A refusal is a JSON error with error 0, as Kafka answers it.
            text = token.decode("utf-8", "replace")
            bearer = [p[len("auth=Bearer ") :] for p in text.split("\x01") if p.startswith("auth=Bearer ")]
            try:
                body = bearer[0].split(".")[1]
                claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            except (IndexError, ValueError):
                claims = None
            if (
                not isinstance(claims, dict)
                or "sub" not in claims
                or claims.get("bad")
                or claims["sub"] in self.refused_subjects
            ):
                error = json.dumps({"status": "invalid_token"}).encode()
                return SaslAuthenticateResponse(auth_bytes=error), False, None
            subject = str(claims["sub"])
            return SaslAuthenticateResponse(session_lifetime_ms=self.lifetimes.get(subject, 0)), True, subject
        try:
            if scram_server is None:
                named: list[str] = []

                def lookup(user: str) -> Any:
                    named.append(user)
                    return self._auth_info[(mechanism, user)]

                server = self._scram[mechanism].make_server(lookup)
                server.set_client_first(token.decode("utf-8"))
                first = SaslAuthenticateResponse(auth_bytes=server.get_server_first().encode())
                return first, False, ((server, named[0]), None)
            server, user = scram_server
            server.set_client_final(token.decode("utf-8"))
            reply = SaslAuthenticateResponse(auth_bytes=server.get_server_final().encode())
            return reply, True, (None, user)
        except Exception:
            return refuse("Authentication failed during authentication due to invalid credentials with SASL mechanism")


def _frame(correlation_id: int, cls: type, version: int, body: Any, flexible: bool) -> bytes:
    out = bytearray(struct.pack(">i", correlation_id))
    if flexible:
        out.append(0)
    encode_struct(body, version, flexible, out)
    return struct.pack(">i", len(out)) + bytes(out)


def _with_sasl_apis(answer: bytes, version: int, transaction_version: int = 0) -> bytes:
    try:
        correlation_id, body = decode_response(API_VERSIONS, version, answer)
    except ValueError:
        return struct.pack(">i", len(answer)) + answer  # an error answer (e.g. unsupported version)
    assert isinstance(body, ApiVersionsResponse)
    keys = {k.api_key for k in body.api_keys}
    for key, high in ((SASL_HANDSHAKE, 1), (SASL_AUTHENTICATE, 2), (DESCRIBE_ACLS, 3)):
        if key not in keys:
            body.api_keys.append(ApiVersionsResponseApiVersion(api_key=key, min_version=0, max_version=high))
    body.api_keys.sort(key=lambda k: k.api_key)
    if transaction_version:
        body.finalized_features_epoch = max(body.finalized_features_epoch, 1)
        body.finalized_features.append(
            ApiVersionsResponseFinalizedFeatureKey(
                name="transaction.version", max_version_level=transaction_version, min_version_level=transaction_version
            )
        )
        if transaction_version >= 2:
            for entry in body.api_keys:
                if entry.api_key == PRODUCE:
                    entry.max_version = max(entry.max_version, 12)
    return encode_response(API_VERSIONS, version, correlation_id, body)


@contextlib.contextmanager
def fronted_broker(log: Path, users: dict[str, str], **options: Any) -> Iterator[tuple[SaslFront, str]]:
    """A local broker (Tansu, memory storage) that advertises the front's address, so every client
    path goes through the front; yields the front and its bootstrap address. ``options`` are
    ``SaslFront`` fields (``anonymous``, ``transaction_version``, ...)."""
    broker_port, front_port = free_port(), free_port()
    out = open(log, "ab")  # noqa: SIM115
    proc = popen(
        [
            broker_binary(),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{broker_port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{front_port}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    try:
        _wait_port(broker_port, proc)
        with SaslFront(front_port, ("127.0.0.1", broker_port), users, **options) as front:
            yield front, f"127.0.0.1:{front_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("broker did not start")
