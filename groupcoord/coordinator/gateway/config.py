"""Gateway settings: listener, backing cluster, limits, TLS."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class TlsSettings(BaseModel):
    """TLS in the terms Kafka clients use (``ssl.cafile``, ``ssl.certfile``, ``ssl.keyfile``).

    On the listener, ``certfile``/``keyfile`` are the gateway's own identity and ``cafile``, when
    given with ``require_client_cert``, verifies client certificates. Towards the cluster,
    ``cafile`` verifies the brokers and ``certfile``/``keyfile`` are the client identity for mTLS.
    """

    model_config = ConfigDict(frozen=True)

    # CA bundle (ssl.cafile).
    cafile: Path | None = None
    # Certificate chain (ssl.certfile).
    certfile: Path | None = None
    # Private key (ssl.keyfile), unless it is in certfile.
    keyfile: Path | None = None
    # Password of the private key (ssl.key.password).
    password: str | None = None
    # ssl.endpoint.identification.algorithm=https; only meaningful towards the cluster.
    check_hostname: bool = True
    # On the listener: clients must present a certificate that cafile verifies (mTLS).
    require_client_cert: bool = False

    def server_context(self) -> ssl.SSLContext:
        if self.certfile is None:
            raise ValueError("a TLS listener needs certfile (and keyfile unless the key is in certfile)")
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.certfile, self.keyfile, self.password)
        if self.cafile is not None:
            ctx.load_verify_locations(self.cafile)
        ctx.verify_mode = ssl.CERT_REQUIRED if self.require_client_cert else ssl.CERT_NONE
        return ctx

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.cafile)
        if self.certfile is not None:
            ctx.load_cert_chain(self.certfile, self.keyfile, self.password)
        ctx.check_hostname = self.check_hostname
        return ctx


class GatewayConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    bootstrap_servers: list[str] = Field(min_length=1)
    listen_host: str = "127.0.0.1"
    listen_port: int = Field(default=9092, ge=0, lt=65536)
    # The host clients are told to use for every sidecar listener (defaults to listen_host).
    advertised_host: str | None = None
    # Fixed sidecar ports per backing broker node id; brokers not named get an ephemeral port.
    broker_listen_ports: dict[int, int] = Field(default_factory=dict)
    # Fixed ports per backing broker node id for the listener where ``serve`` presents that broker
    # as a coordinator under a node id of this process's own (docs/design/multi-process-addresses.md).
    # With broker_listen_ports pinned, only the brokers named here get such an alias (an ephemeral
    # port may not be reachable where ports are published one by one); otherwise every broker does.
    coordinator_alias_ports: dict[int, int] = Field(default_factory=dict)
    # Node id under which Metadata and FindCoordinator present this sidecar's group coordinator.
    # Kept away from 0..small (real broker ids) and from the top of the int32 range, which the
    # Java client reserves for coordinator connection ids (Integer.MAX_VALUE - node id).
    coordinator_node_id: int = Field(default=1_000_000, ge=0, lt=2**31 - 2**20)
    max_frame_bytes: int = Field(default=100 * 1024 * 1024, gt=0)
    max_connections: int = Field(default=1000, gt=0)
    # Kafka's max.connections.per.ip: connections from one client address (TLS handshakes in
    # progress included); the rest are closed at accept.
    max_connections_per_ip: int = Field(default=1000, gt=0)
    # Requests a client may have outstanding on one connection before the gateway stops reading
    # from it; bounds the memory a client that never reads its responses can hold.
    max_in_flight_per_connection: int = Field(default=64, gt=0)
    # Bytes held at once across all connections: request frames being read plus forwarded answers
    # not yet written. A connection that cannot get budget stops reading until some is freed.
    max_buffered_bytes: int = Field(default=512 * 1024 * 1024, gt=0)
    # Forwarded answers one connection may hold unwritten (a client that does not read stalls only
    # its own upstream connection).
    max_buffered_bytes_per_connection: int = Field(default=100 * 1024 * 1024, gt=0)
    # Kafka's connections.max.idle.ms: a connection with nothing read and nothing owed for this
    # long is closed.
    connections_max_idle_ms: int = Field(default=600_000, gt=0)
    # Once a frame has started, the rest of it (prefix and body) must arrive within this time;
    # stops slowloris senders holding a buffer and a connection slot.
    request_read_timeout_ms: int = Field(default=30_000, gt=0)
    tls_handshake_timeout_ms: int = Field(default=10_000, gt=0)
    # Array elements (groups, topics, partitions, members, ids; nested arrays summed) one group
    # request may carry; a larger request closes the connection, as an unparseable one does.
    max_group_request_elements: int = Field(default=10_000, gt=0)
    # Group requests are small; a larger frame is refused before it is decoded (decoding a
    # multi-megabyte array would itself hold the event loop).
    max_group_request_bytes: int = Field(default=2 * 1024 * 1024, gt=0)
    upstream_connect_timeout_s: float = Field(default=10.0, gt=0)
    api_versions_ttl_s: float = Field(default=300.0, ge=0)
    listener_tls: TlsSettings | None = None
    upstream_tls: TlsSettings | None = None
    # "required": a connection must authenticate (SASL relayed to the cluster, or a verified TLS
    # client certificate) before any group API is answered or anything but ApiVersions,
    # SaslHandshake and SaslAuthenticate is forwarded.
    authentication: Literal["none", "required"] = "none"
    # With upstream_tls.certfile, every forwarded request of a client that did not authenticate
    # itself with SASL would reach the cluster as the sidecar's own principal. That is refused
    # (the connection is closed) unless the operator sets this.
    allow_shared_upstream_identity: bool = False
    # Topics no client may reach through the gateway (the coordinator's log and directory topics).
    protected_topics: list[str] = Field(default_factory=list)
    # Groups of the sidecar's own on the cluster (placement): no ACL request through the gateway
    # may cover them (group APIs on them are refused by the group handler).
    protected_groups: list[str] = Field(default_factory=list)
    # Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
    # and Describe/Alter/DeleteShareGroupOffsets are offered in ApiVersions and answered by the group handler; off, a client
    # asking for them has its connection closed, as a broker without them does.
    share_groups_enabled: bool = False
    # The user name the sidecar's processes authenticate as when they relay a request to the
    # process that owns its group (``gateway/relay.py``; set by ``groupcoord serve``): a relayed
    # request from a connection authenticated as it is answered for the caller it names.
    relay_principal: str | None = None

    @property
    def shares_upstream_identity(self) -> bool:
        return self.upstream_tls is not None and self.upstream_tls.certfile is not None

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def public_host(self) -> str:
        return self.advertised_host or self.listen_host

    def bootstrap_addresses(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for entry in self.bootstrap_servers:
            host, sep, port = entry.rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"bootstrap server {entry!r} is not host:port")
            out.append((host.strip("[]") or "127.0.0.1", int(port)))
        return out
