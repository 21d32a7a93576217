"""Kafka ACL semantics of AclAuthorizer, and the ACL file formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.coordinator.security.authorizer import (
    Acl,
    AclAuthorizer,
    AclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    acls_from_cluster_bindings,
    load_acl_file,
)

G, T = ResourceType.GROUP, ResourceType.TOPIC


def acl(
    name: str,
    op: Operation,
    principal: str = "User:alice",
    perm: Permission = Permission.ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
    rtype: ResourceType = G,
) -> Acl:
    return Acl(rtype, name, pattern, principal, host, op, perm)


def test_literal_prefixed_and_wildcard_resources() -> None:
    a = AclAuthorizer(
        [
            acl("orders", Operation.READ),
            acl("team-a-", Operation.READ, pattern=PatternType.PREFIXED),
            acl("*", Operation.DESCRIBE, principal="User:bob"),
        ]
    )
    assert a.authorize("alice", "10.0.0.1", Operation.READ, G, "orders")
    assert not a.authorize("alice", "10.0.0.1", Operation.READ, G, "orders-2")
    assert a.authorize("alice", "10.0.0.1", Operation.READ, G, "team-a-x")
    assert not a.authorize("alice", "10.0.0.1", Operation.READ, G, "team-b-x")
    assert a.authorize("bob", "h", Operation.DESCRIBE, G, "anything")
    assert not a.authorize("bob", "h", Operation.READ, G, "anything")
    assert not a.authorize("carol", "h", Operation.DESCRIBE, G, "orders")  # no ACL: denied
    assert not a.authorize(None, "h", Operation.DESCRIBE, G, "orders")


def test_deny_wins_and_implied_describe() -> None:
    a = AclAuthorizer(
        [
            acl("*", Operation.ALL, principal="User:*"),
            acl("secret", Operation.READ, perm=Permission.DENY),
            acl("locked", Operation.ALL, perm=Permission.DENY, principal="User:*"),
        ]
    )
    assert a.authorize("alice", "h", Operation.READ, G, "open")
    assert not a.authorize("alice", "h", Operation.READ, G, "secret")
    assert a.authorize("alice", "h", Operation.DESCRIBE, G, "secret")  # DENY READ does not deny DESCRIBE
    assert a.authorize("bob", "h", Operation.READ, G, "secret")
    assert not a.authorize("bob", "h", Operation.DESCRIBE, G, "locked")
    b = AclAuthorizer([acl("g", Operation.DELETE), acl("t", Operation.WRITE, rtype=T)])
    assert b.authorize("alice", "h", Operation.DESCRIBE, G, "g")  # DELETE implies DESCRIBE
    assert b.authorize("alice", "h", Operation.DESCRIBE, T, "t")  # WRITE implies DESCRIBE
    assert not b.authorize("alice", "h", Operation.READ, G, "g")
    assert not b.authorize("alice", "h", Operation.DESCRIBE, T, "g")  # resource types do not mix


def test_hosts_and_super_users() -> None:
    a = AclAuthorizer([acl("g", Operation.READ, host="10.0.0.5")], super_users=["User:admin"])
    assert a.authorize("alice", "10.0.0.5", Operation.READ, G, "g")
    assert not a.authorize("alice", "10.0.0.6", Operation.READ, G, "g")
    assert a.authorize("admin", "anywhere", Operation.DELETE, G, "whatever")


def test_acl_files_json_and_toml(tmp_path: Path) -> None:
    entries = [
        {
            "principal": "User:alice",
            "resource_type": "group",
            "resource_name": "team-a-",
            "pattern_type": "prefixed",
            "operation": "read",
        },
        {
            "principal": "User:*",
            "resource_type": "TOPIC",
            "resource_name": "x",
            "operation": "READ",
            "permission": "DENY",
        },
    ]
    as_json = tmp_path / "acls.json"
    as_json.write_text(json.dumps({"acls": entries}))
    as_toml = tmp_path / "acls.toml"
    as_toml.write_text(
        '[[acls]]\nprincipal = "User:alice"\nresource_type = "group"\nresource_name = "team-a-"\n'
        'pattern_type = "prefixed"\noperation = "read"\n\n'
        '[[acls]]\nprincipal = "User:*"\nresource_type = "TOPIC"\nresource_name = "x"\noperation = "READ"\n'
        'permission = "DENY"\n'
    )
    assert load_acl_file(as_json) == load_acl_file(as_toml)
    (first, second) = load_acl_file(as_json)
    assert first.pattern_type is PatternType.PREFIXED and first.host == "*"
    assert second.permission is Permission.DENY


@pytest.mark.parametrize(
    "entry",
    [
        {"principal": "alice", "resource_type": "GROUP", "resource_name": "g", "operation": "READ"},
        {"principal": "User:a", "resource_type": "QUEUE", "resource_name": "g", "operation": "READ"},
        {"principal": "User:a", "resource_type": "GROUP", "resource_name": "g", "operation": "FLY"},
        {"principal": "User:a", "resource_type": "GROUP", "resource_name": "", "operation": "READ"},
        {"principal": "User:a", "resource_type": "GROUP", "resource_name": "g", "operation": "READ", "extra": 1},
    ],
)
def test_bad_acl_entries_are_named(entry: dict[str, object], tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"acls": [entry]}))
    with pytest.raises(AclError, match="entry 0"):
        load_acl_file(path)


def test_cluster_bindings_convert() -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType
    from confluent_kafka.admin import ResourceType as KafkaResourceType

    binding = AclBinding(
        KafkaResourceType.GROUP,
        "team-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    (converted,) = acls_from_cluster_bindings([binding])
    assert converted == acl("team-", Operation.READ, pattern=PatternType.PREFIXED)


def test_names_filter_answers_as_authorize_does() -> None:
    a = AclAuthorizer(
        [
            acl("orders-", Operation.DESCRIBE, pattern=PatternType.PREFIXED, rtype=T),
            acl("orders-secret", Operation.ALL, perm=Permission.DENY, rtype=T),
            acl("pay", Operation.READ, rtype=T),  # READ implies DESCRIBE
            acl("logs-", Operation.WRITE, principal="User:*", pattern=PatternType.PREFIXED, rtype=T),
            acl("*", Operation.DESCRIBE, principal="User:bob", host="10.0.0.9", rtype=T),
            acl("logs-x", Operation.DESCRIBE, perm=Permission.DENY, principal="User:*", rtype=T),
            acl("orders-a", Operation.DESCRIBE, rtype=G),
        ],
        super_users=["User:admin"],
    )
    names = ["orders-a", "orders-secret", "pay", "payments", "logs-a", "logs-x", "other", ""]
    for user in ("alice", "bob", "carol", "admin", None):
        for host in ("127.0.0.1", "10.0.0.9"):
            for op in (Operation.DESCRIBE, Operation.READ):
                view = a.names_filter(user, host, op, T)
                assert [view(n) for n in names] == [a.authorize(user, host, op, T, n) for n in names], (user, host, op)
    alice = a.names_filter("alice", "127.0.0.1", Operation.DESCRIBE, T)
    assert [n for n in names if alice(n)] == ["orders-a", "pay", "logs-a"]
