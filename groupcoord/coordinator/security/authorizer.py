"""Kafka ACL semantics for the group APIs the sidecar answers.

The rules are those of Kafka's ``AclAuthorizer``/``StandardAuthorizer``:

- an ACL matches a resource when its pattern is LITERAL and equal to the name, LITERAL ``*``, or
  PREFIXED and a prefix of the name;
- it matches a request when its principal is the caller's (``User:<name>``) or ``User:*``, its
  host is the caller's address or ``*``, and its operation is the one asked for or ``ALL``;
- any matching DENY refuses; otherwise a matching ALLOW permits; no match refuses (Kafka's
  ``allow.everyone.if.no.acl.found=false``);
- an ALLOW for READ, WRITE, DELETE or ALTER also allows DESCRIBE (ALTER_CONFIGS allows
  DESCRIBE_CONFIGS);
- super users are allowed everything.

ACLs come from a file (``load_acl_file``: JSON or TOML) or from the backing cluster
(``ClusterAclSource``: DescribeAcls through the admin client, refreshed periodically).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from groupcoord.coordinator.logs import drain

log = logging.getLogger(__name__)

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(Enum):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
    DELEGATION_TOKEN = "DELEGATION_TOKEN"
    USER = "USER"


class PatternType(Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Operation(Enum):
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"
    CREATE_TOKENS = "CREATE_TOKENS"
    DESCRIBE_TOKENS = "DESCRIBE_TOKENS"


class Permission(Enum):
    ALLOW = "ALLOW"
    DENY = "DENY"


# What an ALLOW of the key operation implies (Kafka's implied operations).
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER, Operation.ALL}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.ALL}),
}


class AclError(ValueError):
    """An ACL file or entry that cannot be read; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Acl:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def matches_caller(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)


def _enum(cls: type[Enum], value: object, what: str) -> Any:
    if not isinstance(value, str):
        raise AclError(f"{what} must be a string, got {value!r}")
    try:
        return cls(value.strip().upper())
    except ValueError:
        raise AclError(f"unknown {what} {value!r}; one of {[m.value for m in cls]}") from None


def acl_from_mapping(entry: dict[str, Any], where: str = "ACL") -> Acl:
    """One ACL from a file entry (keys as in kafka-acls: principal, host, operation, ...)."""
    known = {"resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"}
    unknown = set(entry) - known
    if unknown:
        raise AclError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(known)}")
    principal = entry.get("principal")
    if not isinstance(principal, str) or ":" not in principal:
        raise AclError(f"{where}: principal must look like 'User:<name>' or 'User:*', got {principal!r}")
    name = entry.get("resource_name")
    resource_type = _enum(ResourceType, entry.get("resource_type"), f"{where} resource_type")
    if resource_type is ResourceType.CLUSTER and name is None:
        name = CLUSTER_NAME
    if not isinstance(name, str) or not name:
        raise AclError(f"{where}: resource_name must be a non-empty string")
    return Acl(
        resource_type=resource_type,
        resource_name=name,
        pattern_type=_enum(PatternType, entry.get("pattern_type", "LITERAL"), f"{where} pattern_type"),
        principal=principal,
        host=str(entry.get("host", WILDCARD)),
        operation=_enum(Operation, entry.get("operation"), f"{where} operation"),
        permission=_enum(Permission, entry.get("permission", "ALLOW"), f"{where} permission"),
    )


def load_acl_file(path: Path) -> list[Acl]:
    """ACLs from ``path``: JSON ``{"acls": [...]}`` or TOML ``[[acls]]`` tables (by file suffix)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise AclError(f"cannot read ACL file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AclError(f"ACL file {path} is not valid {path.suffix.lstrip('.') or 'TOML'}: {exc}") from exc
    entries = data.get("acls") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise AclError(f"ACL file {path} must hold a list named 'acls'")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise AclError(f"ACL file {path}: entry {i} is not a table")
        out.append(acl_from_mapping(entry, f"ACL file {path} entry {i}"))
    return out


class AclAuthorizer:
    """Decides one (principal, host, operation, resource) question from the current ACL set."""

    def __init__(self, acls: Iterable[Acl] = (), super_users: Iterable[str] = ()) -> None:
        self.super_users = frozenset(super_users)
        self._by_type: dict[ResourceType, list[Acl]] = {}
        self.replace(acls)

    def replace(self, acls: Iterable[Acl]) -> None:
        by_type: dict[ResourceType, list[Acl]] = {}
        for acl in acls:
            by_type.setdefault(acl.resource_type, []).append(acl)
        self._by_type = by_type

    @property
    def count(self) -> int:
        return sum(len(v) for v in self._by_type.values())

    def authorize(
        self, user: str | None, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        principal = f"User:{user}" if user is not None else "User:ANONYMOUS"
        if principal in self.super_users:
            return True
        allowed = False
        allowing = _IMPLIED_BY.get(operation, frozenset({operation, Operation.ALL}))
        for acl in self._by_type.get(resource_type, ()):
            if not acl.matches_resource(resource_type, name) or not acl.matches_caller(principal, host):
                continue
            if acl.permission is Permission.DENY:
                if acl.operation in (operation, Operation.ALL):
                    return False
            elif acl.operation in allowing:
                allowed = True
        return allowed

    def names_filter(
        self, user: str | None, host: str, operation: Operation, resource_type: ResourceType
    ) -> Callable[[str], bool]:
        """``authorize`` for many names of one resource type: the caller's ACLs are picked out
        once, from the ACLs as they are now, so each name costs only the ACLs that concern it."""
        principal = f"User:{user}" if user is not None else "User:ANONYMOUS"
        if principal in self.super_users:
            return lambda name: True
        allowing = _IMPLIED_BY.get(operation, frozenset({operation, Operation.ALL}))
        denying = (operation, Operation.ALL)
        relevant = [
            acl
            for acl in self._by_type.get(resource_type, ())
            if acl.matches_caller(principal, host)
            and (acl.operation in denying if acl.permission is Permission.DENY else acl.operation in allowing)
        ]

        def allowed(name: str) -> bool:
            result = False
            for acl in relevant:
                if acl.matches_resource(resource_type, name):
                    if acl.permission is Permission.DENY:
                        return False
                    result = True
            return result

        return allowed


def acls_from_cluster_bindings(bindings: Iterable[Any]) -> list[Acl]:
    """Convert confluent-kafka ``AclBinding`` objects (DescribeAcls) to ``Acl`` values."""
    out = []
    for b in bindings:
        try:
            out.append(
                Acl(
                    resource_type=ResourceType(b.restype.name),
                    resource_name=b.name,
                    pattern_type=PatternType(b.resource_pattern_type.name),
                    principal=b.principal,
                    host=b.host,
                    operation=Operation(b.operation.name),
                    permission=Permission(b.permission_type.name),
                )
            )
        except ValueError:
            log.warning("ignoring a cluster ACL the sidecar does not understand: %s", b)
    return out


class ClusterAclSource:
    """Reads the cluster's ACLs (DescribeAcls) into an ``AclAuthorizer`` and refreshes them.

    On a failed refresh the previous ACLs stay in force (and a warning is logged); the first
    read must succeed, so a cluster without an authorizer is found at startup.
    """

    def __init__(self, client_config: dict[str, Any], authorizer: AclAuthorizer, refresh_interval_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient(dict(client_config))
        self.authorizer = authorizer
        self.refresh_interval_s = refresh_interval_s
        self._task: asyncio.Task[None] | None = None

    def _describe(self) -> list[Acl]:
        from confluent_kafka.admin import (
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
        )
        from confluent_kafka.admin import ResourceType as KafkaResourceType

        # None matches any name, principal and host (the stubs say str; the library takes None).
        everything = AclBindingFilter(
            KafkaResourceType.ANY,
            None,  # type: ignore[arg-type]
            ResourcePatternType.ANY,
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        try:
            bindings = self._admin.describe_acls(everything, request_timeout=30).result(40)
        finally:
            drain(self._admin)  # its queued librdkafka log lines
        return acls_from_cluster_bindings(bindings)

    async def refresh(self) -> None:
        acls = await asyncio.get_running_loop().run_in_executor(None, self._describe)
        self.authorizer.replace(acls)

    def start(self) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.refresh_interval_s)
                try:
                    await self.refresh()
                except Exception as exc:  # keep the last good ACLs; a broker hiccup must not open or close everything
                    log.warning("refreshing ACLs from the cluster failed (keeping the previous ones): %s", exc)

        self._task = asyncio.create_task(loop(), name="acl-refresh")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class FileAclSource:
    """Keeps an ``AclAuthorizer`` in step with a local ACL file: polls its mtime and size and
    reloads it when either changes, so an edit applies without a restart. An invalid new file is
    logged once (per change) and the previous ACLs stay in force, as Kafka keeps its last good ACLs."""

    def __init__(self, path: Path, authorizer: AclAuthorizer, poll_interval_s: float) -> None:
        self.path = path
        self.authorizer = authorizer
        self.poll_interval_s = poll_interval_s
        self._seen: tuple[int, int] | None = None
        self._task: asyncio.Task[None] | None = None

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self) -> None:
        """Read the file now; raises ``AclError`` (the startup read must succeed)."""
        stamp = self._stamp()
        self.authorizer.replace(load_acl_file(self.path))
        self._seen = stamp

    async def refresh(self) -> None:
        """Reload if the file changed since the last read; keep the old ACLs if it is invalid."""
        stamp = self._stamp()
        if stamp == self._seen:
            return
        self._seen = stamp  # one log line per bad version, not one per poll
        try:
            acls = load_acl_file(self.path)
        except AclError as exc:
            log.warning("ACL file changed but cannot be used (keeping the previous ACLs): %s", exc)
            return
        self.authorizer.replace(acls)
        log.info("ACL file %s reloaded: %d ACLs", self.path, len(acls))

    def start(self) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.poll_interval_s)
                await self.refresh()

        self._task = asyncio.create_task(loop(), name="acl-file-reload")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
