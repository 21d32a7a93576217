"""``groupcoord groups`` and ``groupcoord offsets``: inspect, reset and delete groups through the sidecar.

These talk Kafka to the sidecar's listener (confluent-kafka's AdminClient, kafka-python for
OffsetDelete, which confluent-kafka lacks, and OffsetFetch over the wire, ``groupcoord.cli.offsets_wire``,
where librdkafka's offset listing crashes), exactly as any operator tool would, so they show what
clients see. Output as ``groupcoord.cli.output`` describes (``--format text|wide|json|yaml``); the column
names follow kafka-consumer-groups.sh.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription
from tenacity import Retrying, TryAgain, wait_exponential

from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    CliError,
    CommandConfig,
    Conn,
    Timeout,
    describe_error,
    error_line,
    fail,
    parse_topic_spec,
    usage,
    watermarks,
)
from groupcoord.cli.group_results import (
    check_describe_options,
    exit_on_group_failures,
    group_errors,
    print_deletions,
)
from groupcoord.cli.offsets_wire import COORDINATOR_MOVING, CommittedOffset, OffsetReader, fetch_committed
from groupcoord.cli.output import AsJson, FormatOption, Output
from groupcoord.cli.wire import ConsumerGroupInfo, describe_consumer_groups

groups_app = typer.Typer(help="List, describe and delete groups.", no_args_is_help=True)
offsets_app = typer.Typer(help="Show, reset and delete committed offsets.", no_args_is_help=True)

SIDECAR = "127.0.0.1:9094"
# Group states as this CLI shows them: Kafka's names (ListGroups, kafka-consumer-groups.sh --state)
# in snake_case; the KIP-848 consumer group states included.
STATES = (
    "preparing_rebalance",
    "completing_rebalance",
    "assigning",
    "reconciling",
    "stable",
    "dead",
    "empty",
)
# confluent-kafka's enum names for the classic states end in "-ing"; the consumer states have none
# (UNKNOWN there), so those are read from ConsumerGroupDescribe (``groupcoord.cli.wire``).
_CONFLUENT_STATES = {"preparing_rebalancing": "preparing_rebalance", "completing_rebalancing": "completing_rebalance"}
_TYPES = {t.name.lower(): t for t in ConsumerGroupType if t is not ConsumerGroupType.UNKNOWN}


def _name(value: Any) -> str:
    name = str(getattr(value, "name", value)).lower()
    return _CONFLUENT_STATES.get(name, name)


def _squash(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


# Every spelling accepted in a filter, case-insensitively: Kafka's (PreparingRebalance, Stable,
# Assigning), this CLI's (preparing_rebalance) and confluent-kafka's (preparing_rebalancing).
_STATE_SPELLINGS = {_squash(s): s for s in STATES} | {_squash(k): v for k, v in _CONFLUENT_STATES.items()}


def parse_states(given: list[str]) -> set[str]:
    states = set()
    for s in given:
        state = _STATE_SPELLINGS.get(_squash(s))
        if state is None:
            kafka = ", ".join("".join(w.capitalize() for w in s.split("_")) for s in STATES)
            usage(f"--state {s!r}: expected one of {kafka} (any case)")
        states.add(state)
    return states


# --- shared lookups ---------------------------------------------------------------------------


# Errors of one node's ListGroups that pass (a coordinator moving or loading, a sidecar process
# that left between the Metadata and the ListGroups requests): asked again until the timeout, as
# Kafka's admin client retries them.
_LISTING_RETRIED = COORDINATOR_MOVING | {
    KafkaError._DESTROY,  # "Broker handle destroyed": the node left the cluster's metadata
    KafkaError._TRANSPORT,
}


def _listing_errors(errors: list[Any]) -> list[KafkaError | Any]:
    return [getattr(e, "args", [e])[0] for e in errors]


def list_group_ids(c: Conn, admin: AdminClient) -> list[dict[str, Any]]:
    deadline = time.monotonic() + c.timeout
    for attempt in Retrying(wait=wait_exponential(multiplier=0.1, max=1.0), reraise=True):
        with attempt:
            result = c.wait(admin.list_consumer_groups(request_timeout=c.timeout), "cannot list groups")
            errors = _listing_errors(result.errors)
            passing = all(isinstance(e, KafkaError) and e.code() in _LISTING_RETRIED for e in errors)
            if errors and passing and time.monotonic() < deadline:
                raise TryAgain
    if errors:
        said = "; ".join(dict.fromkeys(describe_error(e) for e in errors))
        fail(f"listing groups failed: {said}" + (f" (still so after {c.timeout:g}s)" if passing else ""))
    rows = [
        {
            "group": g.group_id,
            "type": _name(g.type),
            "state": _name(g.state),
            "simple": g.is_simple_consumer_group,
        }
        for g in sorted(result.valid, key=lambda g: g.group_id)
    ]
    # confluent-kafka knows no KIP-848 state (Assigning, Reconciling): ask ConsumerGroupDescribe.
    unknown = [r["group"] for r in rows if r["state"] == "unknown" and r["type"] == "consumer"]
    try:
        info = consumer_group_info(c, unknown)
    except Exception:  # a cluster that answers ConsumerGroupDescribe oddly: the state stays unknown
        info = None
    for r in rows:
        if info is not None and r["group"] in info and info[r["group"]].state:
            r["state"] = kafka_state(info[r["group"]].state)
    return rows


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def kafka_state(name: str) -> str:
    """Kafka's state name (``PreparingRebalance``) as this CLI shows it (``preparing_rebalance``)."""
    return _CAMEL.sub("_", name).lower()


def describe(c: Conn, admin: AdminClient, groups: list[str]) -> dict[str, ConsumerGroupDescription | str]:
    """Each group's description, or why it could not be described (in words)."""
    if not groups:
        # confluent-kafka refuses an empty request (ValueError); --all-groups on a sidecar without
        # consumer or classic groups describes none, an empty result as `groups list` gives.
        return {}
    futures = admin.describe_consumer_groups(groups, request_timeout=c.timeout)
    result: dict[str, ConsumerGroupDescription | str] = {}
    for group in groups:
        try:
            d = futures[group].result(timeout=c.timeout)
        except TimeoutError:
            result[group] = f"no answer from {c.bootstrap} within {c.timeout:g}s"
            continue
        except Exception as exc:
            result[group] = describe_error(exc.args[0] if exc.args else exc)
            continue
        if d.state in (ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN) and not d.members:
            result[group] = "the group does not exist"
        else:
            result[group] = d
    return result


def committed(c: Conn, group: str, reader: OffsetReader | None = None) -> dict[tuple[str, int], CommittedOffset]:
    """The group's committed offsets (partitions without one left out), read from its coordinator
    over the wire (``groupcoord.cli.offsets_wire``: never librdkafka's admin offset listing, which
    crashes the process while the coordinator moves), through ``reader``'s connections if given.
    A partition-level error fails the command."""
    offsets: dict[tuple[str, int], CommittedOffset] = {}
    for tp in reader.fetch(group) if reader is not None else fetch_committed(c, group):
        if tp.error is not None:
            fail(f"group {group!r}: {tp.topic}-{tp.partition}: {describe_error(tp.error)}")
        if tp.offset >= 0:
            offsets[(tp.topic, tp.partition)] = tp
    return offsets


def staged_transactional(c: Conn, group: str, reader: OffsetReader | None = None) -> set[tuple[str, int]]:
    """The committed partitions with transactional offsets staged over them: asked with
    require_stable, they answer UNSTABLE_OFFSET_COMMIT until their transaction ends."""
    answer = reader.fetch(group, require_stable=True) if reader is not None else fetch_committed(c, group, True)
    return {(tp.topic, tp.partition) for tp in answer if tp.error_code == KafkaError.UNSTABLE_OFFSET_COMMIT}


def activity(c: Conn, admin: AdminClient, group: str) -> str | None:
    """Why the group counts as active (in words), or None if it is empty or unknown.

    Members are the first sign; a group in a live state without members listed (some brokers'
    own coordinators describe them so) counts as active too, as Kafka's tools require Empty/Dead."""
    d = describe(c, admin, [group])[group]
    if isinstance(d, str):
        if d == "the group does not exist":
            return None
        fail(f"group {group!r}: {d}")
    if d.members:
        return f"has {len(d.members)} active member(s)"
    if d.state not in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN):
        return f"is {_name(d.state)} (it has active members)"
    return None


def _connect(bootstrap: str, command_config: Path | None, timeout: float) -> tuple[Conn, AdminClient]:
    c = Conn(bootstrap, command_config, timeout)
    admin = c.admin()
    c.check_reachable(admin)
    return c, admin


# --- groups list ----------------------------------------------------------------------------


@groups_app.command("list")
def list_groups(
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            help="Only groups in this state (Kafka's names, any case: PreparingRebalance, CompletingRebalance,"
            " Assigning, Reconciling, Stable, Dead, Empty).",
        ),
    ] = None,
    type_: Annotated[
        list[str] | None, typer.Option("--type", help="Only groups of this type (classic, consumer).")
    ] = None,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Every group the coordinator knows, with its type and state."""
    o = Output.of(fmt, as_json)
    states = parse_states(state or [])
    types = {t.lower() for t in type_ or []}
    for t in types - set(_TYPES):
        usage(f"--type {t!r}: expected one of {', '.join(_TYPES)}")
    c, admin = _connect(bootstrap, command_config, timeout)
    rows = [
        g
        for g in list_group_ids(c, admin)
        if (not states or g["state"] in states) and (not types or g["type"] in types)
    ]
    o.result(["group", "type", "state", "simple"], rows)


# --- groups describe ------------------------------------------------------------------------


def _assignment(m: Any, target: bool = False) -> list[tuple[str, int]]:
    a = m.target_assignment if target else m.assignment
    if a is None:
        return []
    return sorted((tp.topic, tp.partition) for tp in a.topic_partitions)


def _fmt(tps: list[tuple[str, int]]) -> str:
    return ",".join(f"{t}-{p}" for t, p in tps)


def _offset_rows(c: Conn, admin: AdminClient, found: dict[str, ConsumerGroupDescription]) -> list[dict[str, Any]]:
    """Kafka's --describe --offsets rows: committed and assigned partitions, with log end and lag."""
    per_group = []
    pending: dict[str, set[tuple[str, int]]] = {}
    with OffsetReader(c) as reader:  # one set of connections for every group's two reads
        for group, d in found.items():
            owner: dict[tuple[str, int], Any] = {}
            for member in d.members:
                for tp in _assignment(member):
                    owner[tp] = member
            per_group.append((group, owner, committed(c, group, reader)))
            pending[group] = staged_transactional(c, group, reader)
    every = sorted({key for _, owner, commits in per_group for key in set(commits) | set(owner)})
    try:
        known = admin.list_topics(timeout=c.timeout).topics
        every = [(t, p) for t, p in every if t in known and p in known[t].partitions]
    except KafkaException as exc:
        fail(f"cannot read topics from {c.bootstrap}: {describe_error(exc.args[0])}")
    # One fetch for all groups; a partition that cannot be read (a deleted topic) shows no log end.
    marks = watermarks(c, [TopicPartition(t, p) for t, p in every], strict=False)
    rows = []
    for group, owner, commits in per_group:
        for key in sorted(set(commits) | set(owner)):
            current = commits[key].offset if key in commits else None
            end = marks.get(key, (None, None))[1]
            m = owner.get(key)
            rows.append(
                {
                    "group": group,
                    "topic": key[0],
                    "partition": key[1],
                    "current-offset": current,
                    "log-end-offset": end,
                    "lag": None if current is None or end is None else max(end - current, 0),
                    "consumer-id": m.member_id if m else None,
                    "host": m.host if m else None,
                    "client-id": m.client_id if m else None,
                    # Transactional offsets staged over the committed one, until the transaction ends.
                    "pending-transaction": key in pending[group],
                }
            )
    return rows


def consumer_group_info(c: Conn, groups: list[str]) -> dict[str, ConsumerGroupInfo] | None:
    """Member protocols and epochs of the consumer-type groups; None when they cannot be read."""
    if c.config().get("security.protocol", "PLAINTEXT").upper() != "PLAINTEXT" or not groups:
        return None
    try:
        return describe_consumer_groups(c.bootstrap, groups, c.timeout)
    except (OSError, ValueError):
        return None


def _member_rows(
    group: str, d: ConsumerGroupDescription, verbose: bool, info: dict[str, ConsumerGroupInfo] | None
) -> list[dict[str, Any]]:
    rows = []
    for m in sorted(d.members, key=lambda m: m.member_id):
        assigned = _assignment(m)
        protocol, epoch = _protocol_and_epoch(group, d, m.member_id, info)
        row: dict[str, Any] = {
            "group": group,
            "consumer-id": m.member_id,
            "group-instance-id": m.group_instance_id,
            "host": m.host,
            "client-id": m.client_id,
            "protocol": protocol,
            "epoch": epoch,
            "#partitions": len(assigned),
        }
        if verbose:
            row["assignment"] = _fmt(assigned)
            row["target-assignment"] = _fmt(_assignment(m, target=True)) if m.target_assignment else None
        rows.append(row)
    return rows


def migration_policy(config: Path | None) -> str:
    """group.consumer.migration.policy as ``groupcoord serve`` would read it here (file < environment)."""
    from groupcoord.coordinator.config import ConfigError, load_settings

    try:
        return load_settings(config).consumer_group_config().migration_policy
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # pydantic-settings' own errors (a GROUPCOORD_* value that is not JSON)
        fail(f"invalid configuration: {exc}")


def _protocol_and_epoch(
    group: str, d: ConsumerGroupDescription, member_id: str, info: dict[str, ConsumerGroupInfo] | None
) -> tuple[str | None, int | None]:
    if d.type is ConsumerGroupType.CLASSIC:
        return "classic", None  # a classic group's members all speak it; its epoch is the generation
    if info is None or group not in info:
        return None, None
    return info[group].members.get(member_id, (None, None))


def _state_row(group: str, d: ConsumerGroupDescription, info: dict[str, ConsumerGroupInfo] | None) -> dict[str, Any]:
    coordinator = d.coordinator
    protocols = sorted({p for p, _ in info[group].members.values()}) if info and group in info else []
    if d.type is ConsumerGroupType.CLASSIC and d.members:
        protocols = ["classic"]
    return {
        "group": group,
        "type": _name(d.type),
        "state": kafka_state(info[group].state) if info and group in info and info[group].state else _name(d.state),
        "assignment-strategy": d.partition_assignor or None,
        "#members": len(d.members),
        "member-protocols": ",".join(protocols) or None,
        "group-epoch": info[group].group_epoch if info and group in info else None,
        "coordinator": f"{coordinator.host}:{coordinator.port} ({coordinator.id})" if coordinator else None,
    }


@groups_app.command("describe")
def describe_groups(
    groups: Annotated[list[str] | None, typer.Argument(help="Group ids.", show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group.")] = False,
    offsets: Annotated[bool, typer.Option("--offsets", help="Offsets and lag per partition (the default).")] = False,
    members: Annotated[bool, typer.Option("--members", help="One row per member.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="With --members: each member's assignment.")] = False,
    state: Annotated[bool, typer.Option("--state", help="Type, state, assignor and member count.")] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="With --state: refresh every second until every group is stable or empty.")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="The coordinator's TOML configuration, for its migration policy (the Kafka protocol does not"
            " expose it; GROUPCOORD_* environment variables count too, as for serve).",
        ),
    ] = None,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Describe groups like kafka-consumer-groups.sh --describe (--offsets, --members, --state)."""
    o = Output.of(fmt, as_json)
    check_describe_options(groups, all_groups, offsets, members, state)
    if verbose and not members:
        fail("--verbose goes with --members")
    view = "members" if members else "state" if state or watch else "offsets"
    policy = migration_policy(config) if view == "state" else None
    c, admin = _connect(bootstrap, command_config, timeout)
    names = [g["group"] for g in list_group_ids(c, admin)] if all_groups else list(dict.fromkeys(groups or []))
    deadline = time.monotonic() + max(timeout, 60.0) * 10 if watch else 0.0
    while True:
        described = describe(c, admin, names)
        failures = {g: d for g, d in described.items() if isinstance(d, str)}
        found = {g: d for g, d in described.items() if not isinstance(d, str)}
        consumer_groups = [g for g, d in found.items() if d.type is ConsumerGroupType.CONSUMER]
        info = consumer_group_info(c, consumer_groups) if view != "offsets" else None
        wide: list[str] = []
        if view == "state":
            rows = [{**_state_row(g, d, info), "migration-policy": policy} for g, d in found.items()]
            columns = ["group", "type", "state", "assignment-strategy", "#members", "member-protocols"]
            columns += ["group-epoch", "migration-policy", "coordinator"]
        elif view == "members":
            rows = [r for g, d in found.items() for r in _member_rows(g, d, verbose or o.wide, info)]
            columns = ["group", "consumer-id", "group-instance-id", "host", "client-id", "protocol", "epoch"]
            columns += ["#partitions"]
            columns += ["assignment", "target-assignment"] if verbose or o.wide else []
        else:
            rows = _offset_rows(c, admin, found)
            columns = ["group", "topic", "partition", "current-offset", "log-end-offset", "lag"]
            columns += ["consumer-id", "host", "client-id"]
            # Not in Kafka's table: shown with --format wide, and always in JSON and YAML.
            wide = ["pending-transaction"]
        settled = all(r["state"] in ("stable", "empty") for r in rows) if view == "state" else True
        o.result(columns, rows, errors=group_errors(failures), wide_columns=wide)
        exit_on_group_failures(failures)
        if not watch or settled or time.monotonic() > deadline:
            break
        time.sleep(1.0)


# --- groups delete --------------------------------------------------------------------------


@groups_app.command("delete")
def delete_groups(
    groups: Annotated[list[str], typer.Argument(help="Group ids (each must have no active members).")],
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Delete empty groups and their offsets; each group gets its own result. A share group is
    refused here (delete it with 'groupcoord share-groups delete')."""
    o = Output.of(fmt, as_json)
    c, admin = _connect(bootstrap, command_config, timeout)
    names = list(dict.fromkeys(groups))
    refused = _not_consumer_groups(c, admin, names)
    sent = [g for g in names if g not in refused]
    futures = admin.delete_consumer_groups(sent, request_timeout=c.timeout) if sent else {}
    answered: dict[str, str | None] = {}
    for group in sent:
        try:
            futures[group].result(timeout=c.timeout)
            answered[group] = None
        except TimeoutError:
            answered[group] = f"no answer within {c.timeout:g}s"
        except Exception as exc:
            answered[group] = describe_error(exc.args[0] if exc.args else exc)
    print_deletions(o, {g: refused[g] if g in refused else answered[g] for g in names}, "group")


SHARE_GROUP = "it is a share group (delete it with 'groupcoord share-groups delete')"


def _not_consumer_groups(c: Conn, admin: AdminClient, names: list[str]) -> dict[str, str]:
    """The ids not to send DeleteGroups for, and why (in words). DeleteGroups deletes a group of
    any type, so, as ``share-groups delete`` sends only the ids ShareGroupDescribe finds, this
    sends only consumer and classic groups: an id DescribeGroups does not know (as Kafka, it
    answers a share group as a group that does not exist) is not sent, and is named a share
    group when ShareGroupDescribe finds one there."""
    from groupcoord.cli.share import share_groups_among  # share imports this module (via reset)

    unsure = {g: d for g, d in describe(c, admin, names).items() if isinstance(d, str)}
    if not unsure:
        return {}
    try:
        shares = share_groups_among(c.bootstrap, c.command_config, c.timeout, list(unsure))
    except CliError:
        # Cannot ask (settings the wire client lacks): delete nothing DescribeGroups did not find.
        return dict(unsure)
    refused = {g: SHARE_GROUP for g in unsure if g in shares}
    # Another error (an ACL for DESCRIBE only, a coordinator loading): DeleteGroups answers for itself.
    refused |= {g: why for g, why in unsure.items() if g not in shares and why == "the group does not exist"}
    return refused


# --- offsets show / delete ------------------------------------------------------------------


@offsets_app.command("show")
def show_offsets(
    group: Annotated[str, typer.Argument(help="Group id.")],
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Committed offsets of a group; a group that does not exist is an error, as for describe."""
    o = Output.of(fmt, as_json)
    c, admin = _connect(bootstrap, command_config, timeout)
    found = describe(c, admin, [group])[group]
    if isinstance(found, str):
        fail(f"group {group!r}: {found}")
    rows = [
        {"group": group, "topic": t, "partition": p, "offset": tp.offset, "metadata": tp.metadata or ""}
        for (t, p), tp in sorted(committed(c, group).items())
    ]
    o.result(["group", "topic", "partition", "offset", "metadata"], rows, title=f"offsets of {group}")


def _kafka_python_config(c: Conn) -> dict[str, Any]:
    """The few librdkafka properties kafka-python understands, renamed."""
    props = {k: v for k, v in c.config().items() if isinstance(v, str)}
    names = {
        "security.protocol": "security_protocol",
        "sasl.mechanism": "sasl_mechanism",
        "sasl.mechanisms": "sasl_mechanism",
        "sasl.username": "sasl_plain_username",
        "sasl.password": "sasl_plain_password",
        "ssl.ca.location": "ssl_cafile",
        "ssl.certificate.location": "ssl_certfile",
        "ssl.key.location": "ssl_keyfile",
        "ssl.key.password": "ssl_password",
    }
    conf: dict[str, Any] = {names[k]: v for k, v in props.items() if k in names}
    conf["bootstrap_servers"] = c.bootstrap.split(",")
    conf["request_timeout_ms"] = int(c.timeout * 1000) + 1000
    conf["client_id"] = "groupcoord-cli"
    return conf


@offsets_app.command("delete")
def delete_offsets(
    group: Annotated[str, typer.Option("--group", help="Group id.")],
    topic: Annotated[list[str], typer.Option("--topic", help="TOPIC or TOPIC:P,P (repeatable).")],
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Delete a group's committed offsets for some partitions (OffsetDelete). Refused for partitions
    the group's members are subscribed to."""
    o = Output.of(fmt, as_json)
    wanted = dict(parse_topic_spec(t) for t in topic)
    c, admin = _connect(bootstrap, command_config, timeout)
    commits = committed(c, group)
    tps: list[tuple[str, int]] = []
    for t, parts in wanted.items():
        have = sorted(p for (ct, p) in commits if ct == t)
        tps += [(t, p) for p in (parts if parts is not None else have)]
    if not tps:
        fail(f"group {group!r} has no committed offsets for {', '.join(wanted)}")
    result = delete_group_offsets(c, group, tps)
    rows = [
        {"group": group, "topic": t, "partition": p, "deleted": not words, "error": words}
        for (t, p), words in sorted(result.items())
    ]
    errors = [r for r in rows if r["error"]]
    # One result per partition on stdout, as share-groups delete-offsets prints its own; the
    # failures also as error lines on stderr.
    o.result(["group", "topic", "partition", "deleted", "error"], rows, errors=errors)
    for r in errors:
        error_line(f"cannot delete the offset of group {group!r} for {r['topic']}-{r['partition']}: {r['error']}")
    if errors:
        raise typer.Exit(1)


def delete_group_offsets(
    c: Conn, group: str, tps: list[tuple[str, int]], where: str = ""
) -> dict[tuple[str, int], str | None]:
    """OffsetDelete of ``tps`` (through kafka-python: confluent-kafka has no call for it): per
    partition None when deleted, else why not (in words). A request that fails as a whole (no
    connection, an API the cluster does not offer, the group not empty) is a ``CliError``, its
    line naming ``where`` after the group (`` on the cluster``)."""
    import logging

    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError as PyKafkaError

    logging.getLogger("kafka").setLevel(logging.CRITICAL + 1)
    try:
        client = KafkaAdminClient(**_kafka_python_config(c))
    except PyKafkaError as exc:
        fail(f"cannot connect to {c.bootstrap}: {exc}")
    try:
        result = client.delete_group_offsets(group, [_py_tp(t, p) for t, p in tps])
    except PyKafkaError as exc:
        fail(f"cannot delete offsets of group {group!r}{where}: {_py_error_words(exc)}")
    finally:
        client.close()
    return {
        (tp.topic, tp.partition): None if error is None or getattr(error, "errno", 0) == 0 else _py_error_words(error)
        for tp, error in result.items()
    }


def _py_tp(topic: str, partition: int) -> Any:
    from kafka.structs import TopicPartition as PyTopicPartition

    return PyTopicPartition(topic, partition)


def _py_error_words(error: Any) -> str:
    name = type(error).__name__ if not isinstance(error, type) else error.__name__
    words = {
        "GroupSubscribedToTopicError": "the group's members are subscribed to that topic (stop its consumers first)",
        "GroupIdNotFoundError": "the group does not exist",
        "NonEmptyGroupError": "the group still has active members (stop its consumers first)",
        "UnknownTopicOrPartitionError": "the topic or partition does not exist",
        # An API the broker does not offer (the local broker, Tansu, has no OffsetDelete).
        "IncompatibleBrokerVersion": "the broker does not offer this request (OffsetDelete)",
        "UnsupportedVersionError": "the broker does not offer this request (OffsetDelete)",
    }
    return words.get(name, getattr(error, "description", None) or name)
