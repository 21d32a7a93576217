"""Process configuration: defaults < config file (TOML) < environment (GROUPCOORD_*) < CLI flags."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from groupcoord.coordinator.gateway.config import TlsSettings
from groupcoord.coordinator.groups.config import CLASSIC_PROPERTY_NAMES as CLASSIC_PROPERTIES
from groupcoord.coordinator.groups.config import PROPERTY_NAMES as CONSUMER_PROPERTIES
from groupcoord.coordinator.groups.config import SHARE_PROPERTY_NAMES as SHARE_PROPERTIES
from groupcoord.coordinator.groups.config import ClassicGroupConfig, ConsumerGroupConfig, ShareGroupConfig
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.service.answer_budget import DEFAULT_MAX_ANSWER_BYTES

ENV_PREFIX = "GROUPCOORD_"
# The sidecar's own consumer groups on the backing cluster: placement's, and its directory's
# (placement.group_id's default is this prefix and the log topic's name).
PLACEMENT_GROUP_PREFIX = "groupcoord-placement-"


def is_internal_group(group: str) -> bool:
    """A group the sidecar itself runs on the backing cluster (not an application's)."""
    return group.startswith(PLACEMENT_GROUP_PREFIX)


class ConfigError(ValueError):
    """A configuration problem, worded for the person who has to fix it (one line)."""


def _hostport(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return value


class AuthorizationSettings(BaseModel):
    """Where ACLs come from when ``gateway.authentication = "required"`` (see README, Security)."""

    model_config = {"frozen": True, "extra": "forbid"}

    # "cluster": DescribeAcls on the backing cluster, refreshed; "file": a local JSON/TOML file.
    acls: Literal["cluster", "file"] = "cluster"
    # The ACL file when acls = "file" (JSON or TOML).
    acl_file: Path | None = None
    # How often the ACLs are read again.
    refresh_interval_ms: int = Field(30_000, ge=1000)
    # Kafka's super.users: principals ("User:<name>") allowed everything.
    super_users: list[str] = Field(default_factory=list)

    @field_validator("super_users")
    @classmethod
    def _check_principals(cls, value: list[str]) -> list[str]:
        for principal in value:
            if not principal.startswith("User:") or len(principal) <= 5:
                raise ValueError(f"super user {principal!r} must look like 'User:<name>'")
        return value


class GatewaySettings(BaseModel):
    """Listener limits and TLS (see groupcoord/coordinator/gateway/config.py for what each one does)."""

    model_config = {"frozen": True, "extra": "forbid"}

    # Largest request frame read from a client; a larger one closes the connection.
    max_frame_bytes: int = Field(100 * 1024 * 1024, gt=0)
    # Client connections open at once; more are refused.
    max_connections: int = Field(1000, gt=0)
    # Requests read ahead of their answers on one connection.
    max_in_flight_per_connection: int = Field(64, gt=0)
    # Kafka's max.connections.per.ip; lower it when clients are many hosts.
    max_connections_per_ip: int = Field(1000, gt=0)
    # Request frames being read plus forwarded answers not yet written, all connections.
    max_buffered_bytes: int = Field(512 * 1024 * 1024, gt=0)
    # Forwarded answers one connection may hold unwritten.
    max_buffered_bytes_per_connection: int = Field(100 * 1024 * 1024, gt=0)
    # Kafka's connections.max.idle.ms: an idle connection is closed after this.
    connections_max_idle_ms: int = Field(600_000, gt=0)
    # A frame, once started, must arrive within this (slowloris).
    request_read_timeout_ms: int = Field(30_000, gt=0)
    # A TLS handshake in progress holds a connection slot for at most this.
    tls_handshake_timeout_ms: int = Field(10_000, gt=0)
    # Array elements in one group request (nested summed); more closes the connection.
    max_group_request_elements: int = Field(10_000, gt=0)
    # A larger group request is refused (connection closed) before it is decoded.
    max_group_request_bytes: int = Field(2 * 1024 * 1024, gt=0)
    # The most one group read request's answer may take (groupcoord/coordinator/service/answer_budget.py);
    # entries beyond it are answered UNKNOWN_SERVER_ERROR. Not a listener setting: the service
    # applies it while it builds the answer.
    max_group_response_bytes: int = Field(DEFAULT_MAX_ANSWER_BYTES, ge=1024 * 1024)
    # Broker node id -> local port of its forwarded listener; ephemeral ports when empty.
    broker_listen_ports: dict[int, int] = Field(default_factory=dict)
    # Broker node id -> local port where serve presents that broker as a coordinator under a node
    # id of this process's own (docs/design/multi-process-addresses.md). With broker_listen_ports
    # set, only the brokers named here get one; otherwise every broker does, on an ephemeral port.
    coordinator_alias_ports: dict[int, int] = Field(default_factory=dict)
    # TLS on the client listener; off when unset.
    listener_tls: TlsSettings | None = None
    # TLS towards the cluster; off when unset.
    upstream_tls: TlsSettings | None = None
    # "required": clients authenticate (SASL or mTLS), verified by the cluster (see Security).
    authentication: Literal["none", "required"] = "none"
    # Allow authentication where all clients would reach the cluster as one identity.
    allow_shared_upstream_identity: bool = False
    authorization: AuthorizationSettings = Field(default_factory=AuthorizationSettings)


class PlacementSettings(BaseModel):
    """How the processes sharing a log split its shards (a consumer group of the backing cluster)."""

    model_config = {"frozen": True, "extra": "forbid"}

    group_id: str | None = Field(None, description="Placement group; default groupcoord-placement-<log topic>.")
    instance_id: str | None = Field(
        None, description="group.instance.id (static membership); default derived from the advertised address."
    )
    # None (auto): on when the cluster's group coordinator speaks KIP-848 (see assignment_strategy).
    # A broker like the local one (Tansu) never expires a static member that was killed, so its
    # shards would stay unowned until it came back with the same id.
    static_membership: bool | None = Field(
        None, description="Use group.instance.id so a quick restart keeps its shards; default auto."
    )
    node_id: int | None = Field(
        None, ge=0, lt=2**31 - 2**20, description="Node id clients see for this process; default derived."
    )
    # session.timeout.ms of this process in the placement group.
    session_timeout_ms: int = Field(10_000, ge=1000, le=300_000)
    # heartbeat.interval.ms of this process in the placement group.
    heartbeat_interval_ms: int = Field(1000, ge=100, le=60_000)
    # auto: cooperative-sticky when the cluster advertises ConsumerGroupHeartbeat (a KIP-848 group
    # coordinator: Apache Kafka 4.x, or another groupcoord), else the eager roundrobin. The local
    # broker (Tansu) never completes the second round of a cooperative rebalance, so a joining
    # process would get no shards there (see README).
    assignment_strategy: str = Field("auto", pattern="^(auto|roundrobin|range|cooperative-sticky)$")
    refresh_interval_ms: int = Field(1000, ge=100, description="How often shard owners are re-read.")
    # groupcoord/coordinator/runtime/peers.py. Off where something between the processes answers for a dead
    # one with a reset (a proxy or load balancer in front of each sidecar's advertised address).
    fast_failover: bool = Field(
        True,
        description="Remove a peer whose listener refuses connections from placement at once, not at the session timeout.",
    )
    directory_topic: str | None = Field(None, description="Node addresses; default <log topic>-directory.")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid")

    bootstrap_servers: str | None = Field(
        None, description="Backing Kafka cluster; when unset, an embedded local broker is started."
    )
    listen: str = Field("127.0.0.1:9094", description="HOST:PORT of the Kafka-protocol listener.")
    advertised_host: str | None = Field(None, description="Host name clients should use; defaults to the listen host.")
    embedded_broker_listen: str = Field("127.0.0.1:9092", description="Where the embedded broker listens.")
    # The compacted topic that holds the coordinator's state.
    log_topic: str = Field("__group_coordinator_log", min_length=1, max_length=249)
    log_partitions: int = Field(16, ge=1, le=10_000, description="Partition count of the log topic, fixed at creation.")
    log_replication_factor: int = Field(1, ge=1, le=32, description="Use 3 on a production cluster.")
    owner_id: str | None = Field(None, description="Name of this process in the log (host:pid by default).")
    client: dict[str, str] = Field(
        default_factory=dict, description="Extra librdkafka settings for every client (security.protocol, sasl.*)."
    )
    reader_relay: bool = Field(
        True,
        description="The sidecar's consumers reach the cluster through a loopback relay capping Fetch at v12, "
        "where librdkafka cannot crash on a deleted topic (plaintext clusters without Kerberos).",
    )
    offsets: OffsetsConfig = Field(default_factory=OffsetsConfig)
    group: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Kafka group settings by their broker names, e.g. group.consumer.session.timeout.ms "
            "or group.share.record.lock.duration.ms."
        ),
    )
    share_groups_enabled: bool = Field(
        False,
        description=(
            "Serve share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, "
            "ShareAcknowledge and Describe/Alter/DeleteShareGroupOffsets are offered in ApiVersions "
            "and answered here; share groups are listed, "
            "described and deleted like other groups, and share consumers receive their records "
            "through the sidecar (fetched from the brokers, their state written to the log)."
        ),
    )
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    placement: PlacementSettings = Field(default_factory=PlacementSettings)
    metadata_refresh_interval_ms: int = Field(
        10_000, ge=100, description="How often topic metadata (creations, deletions, partitions) is read."
    )
    cluster_wait_ms: int = Field(
        30_000,
        ge=0,
        description="How long serve retries an unreachable cluster at startup before it exits with its error.",
    )
    stop_grace_ms: int = Field(
        25_000,
        ge=1000,
        description=(
            "How long a graceful stop (SIGTERM, SIGINT) may take before serve exits anyway, saying so: "
            "below Kubernetes' terminationGracePeriodSeconds (30 s), so that a call to an unreachable "
            "cluster that never returns cannot keep the process up."
        ),
    )
    stuck_shard_warning_ms: int = Field(
        10_000, ge=100, description="A write not read back from the log within this marks its shard stuck (WARNING)."
    )
    stuck_shard_reload_ms: int = Field(
        60_000, ge=1000, description="A write not read back from the log within this reloads its shard."
    )
    # Logging threshold: DEBUG, INFO, WARNING or ERROR.
    log_level: str = Field("WARNING", pattern="^(DEBUG|INFO|WARNING|ERROR)$")
    event_loop: str = Field(
        "auto", pattern="^(auto|uvloop|asyncio)$", description="uvloop when installed (auto), or asyncio's own loop."
    )
    log_format: str = Field(
        "json",
        pattern="^(json|text)$",
        description="json: one JSON object a line; text: plain lines for a person. Unset, serve picks text "
        "when its stderr is a terminal, else json.",
        # What the reference (docs/gen_reference.py) gives as the default: serve decides when it is
        # unset (groupcoord.cli.main), the model's "json" is only what a Settings built elsewhere gets.
        json_schema_extra={"reference_default": "`text` when stderr is a terminal, else `json`"},
    )
    metrics_listen: str = Field(
        "127.0.0.1:9095", description='HOST:PORT of the HTTP health/metrics endpoint; "" or "off" disables it.'
    )
    metrics_lag_interval_ms: int = Field(
        30_000, ge=0, description="How often consumer lag (/metrics) is refreshed; 0 disables the lag metric."
    )
    metrics_lag_max_partitions: int = Field(
        10_000, ge=0, description="Most (group, topic, partition) lag series exported; the rest are counted as omitted."
    )

    _config_file: Path | None = None

    @field_validator("metrics_listen")
    @classmethod
    def _check_metrics_listen(cls, value: str) -> str:
        return "" if value.strip().lower() in ("", "off") else _hostport(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_in_any_case(cls, value: object) -> object:
        # log4j (Kafka's logging) and Python's logging take level names in any case: `info` too.
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("listen", "embedded_broker_listen")
    @classmethod
    def _check_hostport(cls, value: str) -> str:
        return _hostport(value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)

    @field_validator("group")
    @classmethod
    def _check_group(cls, value: dict[str, str]) -> dict[str, str]:
        known = set(CONSUMER_PROPERTIES) | set(CLASSIC_PROPERTIES) | set(SHARE_PROPERTIES)
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown group settings {unknown}; known: {sorted(known)}")
        ClassicGroupConfig.from_properties(value)
        ConsumerGroupConfig.from_properties(value)
        ShareGroupConfig.from_properties(value)
        return value

    def consumer_group_config(self) -> ConsumerGroupConfig:
        return ConsumerGroupConfig.from_properties(self.group)

    def classic_group_config(self) -> ClassicGroupConfig:
        return ClassicGroupConfig.from_properties(self.group)

    def share_group_config(self) -> ShareGroupConfig:
        return ShareGroupConfig.from_properties(self.group)

    def client_config(self) -> dict[str, Any]:
        if self.bootstrap_servers is None:
            raise ConfigError("no bootstrap servers")
        return {**self.client, "bootstrap.servers": self.bootstrap_servers}


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        where = ".".join(str(x) for x in e["loc"]) or "config"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from a TOML file, the environment and explicit overrides (None = not given)."""
    file_values: dict[str, Any] = {}
    if config_file is not None:
        try:
            file_values = tomllib.loads(config_file.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config_file} is not valid TOML: {exc}") from exc
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        # Environment beats the file, explicit flags beat both.
        from_env = Settings().model_dump(exclude_unset=True, by_alias=False)
        return Settings(**_deep_merge(_deep_merge(file_values, from_env), given))
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_describe(exc)}") from exc
