"""``groupcoord share-groups``: list, describe and delete share groups (KIP-932), like Kafka's
``kafka-share-groups.sh``.

confluent-kafka 2.16 has no share-group admin call, so these speak the Kafka protocol to the
sidecar with the gateway's own codec (``groupcoord.cli.wire``): ListGroups v5 with the type filter
``share``, ShareGroupDescribe v1, FindCoordinator v4 for the coordinator column, DeleteGroups v2.
They first ask ApiVersions whether the sidecar serves share groups (``share_groups_enabled``) and
say so in one line when it does not. Output as ``groupcoord.cli.output`` describes; column names
follow kafka-share-groups.sh.

Share-group offsets: ``describe --offsets`` (DescribeShareGroupOffsets v1: start offset and lag
per share-partition), ``reset-offsets`` (AlterShareGroupOffsets: a dry run unless ``--execute``;
the group must have no members) and ``delete-offsets`` (DeleteShareGroupOffsets), each sent to
the group's coordinator. ``describe`` shows the ``--state`` view by default (Kafka's default is
``--offsets``): kept so that scripts written before offsets were served keep their output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from confluent_kafka import KafkaError

from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    CommandConfig,
    Conn,
    Timeout,
    check_partitions,
    error_line,
    fail,
    parse_topic_spec,
    topic_partitions,
    usage,
    watermarks,
)
from groupcoord.cli.group_results import (
    check_describe_options,
    exit_on_group_failures,
    group_errors,
    print_deletions,
    say_group_failures,
)
from groupcoord.cli.output import AsJson, FormatOption, Output
from groupcoord.cli.reset import datetime_ms, instant, offsets_for_time
from groupcoord.cli.wire import (
    CLIENT_ID,
    CLIENT_SOFTWARE_VERSION,
    CLOSED,
    WireClient,
    closed_words,
    connect_failure,
)
from groupcoord.cli.wire_security import AuthenticationError
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.kafka_words import describe_error
from groupcoord.coordinator.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    AlterShareGroupOffsetsResponse,
)
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.coordinator.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsResponse,
)
from groupcoord.coordinator.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
)
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.messages.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponseDescribedGroup,
)

share_groups_app = typer.Typer(help="List, describe and delete share groups (KIP-932).", no_args_is_help=True)

SIDECAR = "127.0.0.1:9094"
# Kafka's ShareGroupState (a share group has no reconciliation): Empty, Stable, Dead.
STATES = ("empty", "stable", "dead")
NOT_FOUND = "the group does not exist"
OFFSETS_NOT_SERVED = (
    "does not serve share-group offsets (DescribeShareGroupOffsets, AlterShareGroupOffsets and"
    " DeleteShareGroupOffsets, Kafka APIs 90-92)"
)
# ListGroups v5 (the type filter), ShareGroupDescribe v1, FindCoordinator v4 (batched keys), DeleteGroups v2.
_VERSIONS = {
    ApiKey.API_VERSIONS: 3,
    ApiKey.METADATA: 12,
    ApiKey.LIST_GROUPS: 5,
    ApiKey.SHARE_GROUP_DESCRIBE: 1,
    ApiKey.FIND_COORDINATOR: 4,
    ApiKey.DELETE_GROUPS: 2,
}
# The offsets APIs: checked only by the commands that use them.
_OFFSETS_VERSIONS = {
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: 1,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: 0,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: 0,
}
_A = TypeVar("_A")  # a coordinator's answer for one group (``ShareAdmin._ask_coordinators``)


class ShareAdmin:
    """Connections to the sidecar's nodes, the first checked to serve share groups. As Kafka's admin
    client does: ListGroups goes to every node Metadata names (a node lists only the groups it
    coordinates), ShareGroupDescribe and DeleteGroups to each group's coordinator."""

    def __init__(self, bootstrap: str, command_config: Path | None, timeout: float, required: bool = True) -> None:
        """``required``: fail in one line when the sidecar does not serve share groups; otherwise
        ``serves_share_groups`` says so."""
        self.conn = Conn(bootstrap, command_config, timeout)
        self.props = {k: v for k, v in self.conn.config().items() if isinstance(v, str)}
        self.clients: dict[str, WireClient] = {}
        self.answered: set[str] = set()  # the nodes that answered a request: they speak Kafka to us
        self.first = bootstrap.split(",")[0].strip()
        self.bootstrap = bootstrap
        self.versions = {**_VERSIONS, **_OFFSETS_VERSIONS}
        versions = self.call(
            self.first,
            ApiKey.API_VERSIONS,
            ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version=CLIENT_SOFTWARE_VERSION),
        )
        assert isinstance(versions, ApiVersionsResponse)
        offered = self.offered = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        # Metadata (forwarded to the cluster): any version from 1 lists the brokers without topics.
        self.versions[ApiKey.METADATA] = max(
            1, min(_VERSIONS[ApiKey.METADATA], offered.get(ApiKey.METADATA, (0, 0))[1])
        )
        missing = [key for key in _VERSIONS if not _offers(offered, key, self.versions[key])]
        self.serves_share_groups = ApiKey.SHARE_GROUP_DESCRIBE not in missing
        if not self.serves_share_groups:
            if not required:
                return
            fail(f"{bootstrap} does not serve share groups (the sidecar's share_groups_enabled is off)")
        if missing:
            fail(f"{bootstrap} does not offer " + ", ".join(f"{ApiKey(k).name} v{self.versions[k]}" for k in missing))

    def _client(self, node: str) -> WireClient:
        client = self.clients.get(node)
        if client is not None:
            return client
        try:
            client = self.clients[node] = WireClient(node, self.conn.timeout, self.props)
        except (AuthenticationError, OSError, ValueError) as exc:
            fail(connect_failure(node, exc, self.conn.timeout))
        return client

    def call(self, node: str, key: ApiKey, request: Message) -> Message:
        client = self._client(node)
        try:
            answer = client.call(key, self.versions[key], request)
        except CLOSED:
            # Not an API refused by closing, as a broker does: each request here is ApiVersions or
            # one it offers. The sidecar closes what it cannot forward while its cluster is away.
            fail(closed_words(node, answered=node in self.answered))
        except OSError as exc:  # a timeout
            fail(f"no answer from {node} within {self.conn.timeout:g}s: {exc.strerror or exc}")
        except ValueError as exc:
            fail(f"unreadable answer from {node}: {exc}")
        self.answered.add(node)
        return answer

    def nodes(self) -> list[str]:
        response = self.call(self.first, ApiKey.METADATA, MetadataRequest(topics=[]))
        assert isinstance(response, MetadataResponse)
        return sorted({f"{b.host}:{b.port}" for b in response.brokers}) or [self.first]

    def list_groups(self, states: set[str]) -> list[dict[str, Any]]:
        request = ListGroupsRequest(states_filter=sorted(states), types_filter=["share"])
        found: dict[str, str] = {}
        for node in self.nodes():
            response = self.call(node, ApiKey.LIST_GROUPS, request)
            assert isinstance(response, ListGroupsResponse)
            if response.error_code:
                fail(f"listing share groups on {node} failed: {words(response.error_code)}")
            # A node that ignores the type filter (a cluster's own ListGroups) lists other types too.
            found.update({g.group_id: g.group_state.lower() for g in response.groups if g.group_type == "share"})
        return [{"group": g, "state": found[g]} for g in sorted(found)]

    def coordinators(self, groups: list[str]) -> dict[str, tuple[str, int] | str]:
        """Each group's coordinator (``host:port`` and node id), or why it has none (in words)."""
        request = FindCoordinatorRequest(key_type=0, coordinator_keys=groups)
        response = self.call(self.first, ApiKey.FIND_COORDINATOR, request)
        assert isinstance(response, FindCoordinatorResponse)
        answered = {c.key: c for c in response.coordinators}
        result: dict[str, tuple[str, int] | str] = {}
        for g in groups:
            c = answered.get(g)
            if c is None:
                result[g] = "no answer for this group"
            else:
                result[g] = words(c.error_code) if c.error_code else (f"{c.host}:{c.port}", c.node_id)
        return result

    def _ask_coordinators(
        self, groups: list[str], ask: Callable[[str, int, list[str]], Mapping[str, _A]]
    ) -> dict[str, _A | str]:
        """``ask(node, node_id, names)`` of each coordinator about its groups (the answers by group
        id): describe, delete and offsets fan out alike, as Kafka's admin client does. A group
        without a coordinator, or left out of its coordinator's answer, gets why (in words).
        In the order of ``groups``."""
        by_node: dict[tuple[str, int], list[str]] = {}
        result: dict[str, _A | str] = {}
        for g, where in self.coordinators(groups).items():
            if isinstance(where, str):
                result[g] = where
            else:
                by_node.setdefault(where, []).append(g)
        for (node, node_id), names in by_node.items():
            answered = ask(node, node_id, names)
            result.update({g: answered.get(g, "no answer for this group") for g in names})
        return {g: result[g] for g in groups}

    def describe(self, groups: list[str]) -> dict[str, Described | str]:
        """Each group's description with its coordinator, or why it could not be described (in words)."""

        def ask(node: str, node_id: int, names: list[str]) -> dict[str, Described | str]:
            response = self.call(node, ApiKey.SHARE_GROUP_DESCRIBE, ShareGroupDescribeRequest(group_ids=names))
            assert isinstance(response, ShareGroupDescribeResponse)
            return {d.group_id: _described(d, f"{node} ({node_id})") for d in response.groups}

        return self._ask_coordinators(groups, ask)

    def delete(self, groups: list[str]) -> dict[str, int | str]:
        """Each group's DeleteGroups error code, or why it was not asked (in words)."""

        def ask(node: str, _: int, names: list[str]) -> dict[str, int]:
            response = self.call(node, ApiKey.DELETE_GROUPS, DeleteGroupsRequest(groups_names=names))
            assert isinstance(response, DeleteGroupsResponse)
            return {r.group_id: r.error_code for r in response.results}

        return self._ask_coordinators(groups, ask)

    # --- offsets (APIs 90-92), each sent to the group's coordinator ------------------------------

    def _offsets_api(self, key: ApiKey) -> None:
        if not _offers(self.offered, key, self.versions[key]):
            fail(f"{self.bootstrap} {OFFSETS_NOT_SERVED}")

    def _coordinator(self, group: str) -> str:
        where = self.coordinators([group])[group]
        if isinstance(where, str):
            fail(f"group {group!r}: {where}")
        return where[0]

    def offsets(self, groups: list[str]) -> dict[str, DescribeShareGroupOffsetsResponseGroup | str]:
        """Each group's share-partition start offsets and lag, or why not (in words)."""
        self._offsets_api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)

        def ask(node: str, _: int, names: list[str]) -> dict[str, DescribeShareGroupOffsetsResponseGroup | str]:
            request = DescribeShareGroupOffsetsRequest(
                groups=[DescribeShareGroupOffsetsRequestGroup(group_id=g, topics=None) for g in names]
            )
            response = self.call(node, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, request)
            assert isinstance(response, DescribeShareGroupOffsetsResponse)
            return {
                d.group_id: group_words(d.error_code, d.error_message) if d.error_code else d for d in response.groups
            }

        return self._ask_coordinators(groups, ask)

    def alter(self, group: str, starts: dict[str, dict[int, int]]) -> AlterShareGroupOffsetsResponse:
        self._offsets_api(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
        request = AlterShareGroupOffsetsRequest(
            group_id=group,
            topics=[
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=t,
                    partitions=[
                        AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                        for p, o in sorted(ps.items())
                    ],
                )
                for t, ps in sorted(starts.items())
            ],
        )
        response = self.call(self._coordinator(group), ApiKey.ALTER_SHARE_GROUP_OFFSETS, request)
        assert isinstance(response, AlterShareGroupOffsetsResponse)
        return response

    def delete_offsets(self, group: str, topics: list[str]) -> DeleteShareGroupOffsetsResponse:
        self._offsets_api(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
        request = DeleteShareGroupOffsetsRequest(
            group_id=group, topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]
        )
        response = self.call(self._coordinator(group), ApiKey.DELETE_SHARE_GROUP_OFFSETS, request)
        assert isinstance(response, DeleteShareGroupOffsetsResponse)
        return response


@dataclass(frozen=True)
class Described:
    group: ShareGroupDescribeResponseDescribedGroup
    coordinator: str  # host:port (node id), as kafka-share-groups.sh shows it


def _described(d: ShareGroupDescribeResponseDescribedGroup, coordinator: str) -> Described | str:
    if d.error_code:
        return described_error(d)
    return NOT_FOUND if d.group_state == "Dead" else Described(d, coordinator)


def _offers(offered: dict[int, tuple[int, int]], key: int, version: int) -> bool:
    low, high = offered.get(key, (1, 0))
    return low <= version <= high


def words(code: int) -> str:
    return describe_error(KafkaError(code))


def described_error(d: ShareGroupDescribeResponseDescribedGroup) -> str:
    return group_words(d.error_code, d.error_message, unknown=words(d.error_code))


def group_words(code: int, message: str | None, unknown: str = NOT_FOUND) -> str:
    """A group-level error in words. GROUP_ID_NOT_FOUND is also Kafka's answer for an id held by a
    group of another type, which its message says."""
    if code == KafkaError.GROUP_ID_NOT_FOUND:
        if (message or "").endswith("is not a share group."):
            return "it is not a share group (see 'groupcoord groups')"
        return unknown
    return words(code)


def parse_states(given: list[str]) -> set[str]:
    states = {s.lower() for s in given}
    for s in sorted(states - set(STATES)):
        usage(f"--state {s!r}: expected one of Empty, Stable, Dead (any case)")
    return states


# --- share-groups list ----------------------------------------------------------------------


@share_groups_app.command("list")
def list_share_groups(
    state: Annotated[
        list[str] | None, typer.Option("--state", help="Only groups in this state (Empty, Stable; any case).")
    ] = None,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Every share group the sidecar coordinates, with its state."""
    o = Output.of(fmt, as_json)
    states = parse_states(state or [])
    o.result(["group", "state"], ShareAdmin(bootstrap, command_config, timeout).list_groups(states))


# --- share-groups describe ------------------------------------------------------------------


def _state_row(d: Described) -> dict[str, Any]:
    g = d.group
    return {
        "group": g.group_id,
        "coordinator": d.coordinator,
        "state": g.group_state.lower(),
        "assignor": g.assignor_name or None,
        "group-epoch": g.group_epoch,
        "assignment-epoch": g.assignment_epoch,
        "#members": len(g.members),
    }


def _member_rows(d: Described) -> list[dict[str, Any]]:
    rows = []
    for m in sorted(d.group.members, key=lambda m: m.member_id):
        assigned = sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions for p in tp.partitions)
        rows.append(
            {
                "group": d.group.group_id,
                "consumer-id": m.member_id,
                "host": m.client_host,
                "client-id": m.client_id,
                "rack": m.rack_id,
                "member-epoch": m.member_epoch,
                "#partitions": len(assigned),
                # Kafka's topic:partition spelling (kafka-share-groups.sh --members).
                "assignment": ",".join(f"{t}:{p}" for t, p in assigned),
                "subscriptions": ",".join(sorted(m.subscribed_topic_names)),
            }
        )
    return rows


@share_groups_app.command("describe")
def describe_share_groups(
    groups: Annotated[list[str] | None, typer.Argument(help="Group ids.", show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every share group.")] = False,
    members: Annotated[bool, typer.Option("--members", help="One row per member.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="With --members: each member's assignment and subscriptions.")
    ] = False,
    state: Annotated[
        bool, typer.Option("--state", help="Coordinator, state, epochs and member count (the default).")
    ] = False,
    offsets: Annotated[bool, typer.Option("--offsets", help="Start offset and lag per share-partition.")] = False,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Describe share groups like kafka-share-groups.sh --describe (--state, --members, --offsets)."""
    o = Output.of(fmt, as_json)
    check_describe_options(groups, all_groups, offsets, members, state)
    if verbose and not (members or offsets):
        fail("--verbose goes with --members or --offsets")
    admin = ShareAdmin(bootstrap, command_config, timeout)
    names = [g["group"] for g in admin.list_groups(set())] if all_groups else list(dict.fromkeys(groups or []))
    if offsets:
        _describe_offsets(o, admin, names, verbose)
        return
    described = admin.describe(names) if names else {}
    failures = {g: d for g, d in described.items() if isinstance(d, str)}
    found = [d for d in described.values() if not isinstance(d, str)]
    errors = group_errors(failures)
    if members:
        columns = ["group", "consumer-id", "host", "client-id", "rack", "member-epoch", "#partitions"]
        detail = ["assignment", "subscriptions"]
        rows = [r for d in found for r in _member_rows(d)]
        # The assignment: a column with --verbose, shown by --format wide and always in JSON/YAML.
        o.result(columns + detail if verbose else columns, rows, errors=errors, wide_columns=[] if verbose else detail)
        for d in found:
            if not d.group.members:
                o.note(f"share group {d.group.group_id!r} has no active members")
    else:
        columns = ["group", "coordinator", "state", "assignor", "group-epoch", "assignment-epoch", "#members"]
        o.result(columns, [_state_row(d) for d in found], errors=errors)
    exit_on_group_failures(failures)


# --- share-groups delete --------------------------------------------------------------------


@share_groups_app.command("delete")
def delete_share_groups(
    groups: Annotated[list[str], typer.Argument(help="Share group ids (each must have no active members).")],
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Delete empty share groups; each group gets its own result. A group id held by a consumer or
    classic group is refused here (delete those with 'groupcoord groups delete')."""
    o = Output.of(fmt, as_json)
    admin = ShareAdmin(bootstrap, command_config, timeout)
    names = list(dict.fromkeys(groups))
    # DeleteGroups deletes a group of any type: only the ids that are share groups are sent.
    why: dict[str, str | None] = {g: d if isinstance(d, str) else None for g, d in admin.describe(names).items()}
    shares = [g for g in names if why[g] is None]
    for g, answer in (admin.delete(shares) if shares else {}).items():
        why[g] = answer if isinstance(answer, str) else words(answer) if answer else None
    print_deletions(o, why, "share group")


def share_groups_among(bootstrap: str, command_config: Path | None, timeout: float, groups: list[str]) -> set[str]:
    """The ids of ``groups`` that are share groups (none where the sidecar serves no share
    groups), asked as ``share-groups delete`` asks: ShareGroupDescribe at each group's coordinator.
    For ``groups delete``, which leaves share groups to ``share-groups delete`` as that leaves
    consumer and classic groups to it."""
    admin = ShareAdmin(bootstrap, command_config, timeout, required=False)
    try:
        if not admin.serves_share_groups or not groups:
            return set()
        return {g for g, d in admin.describe(groups).items() if not isinstance(d, str)}
    finally:
        for client in admin.clients.values():
            client.close()


# --- offsets ----------------------------------------------------------------------------------


def _offset_rows(d: DescribeShareGroupOffsetsResponseGroup) -> list[dict[str, Any]]:
    rows = []
    for t in sorted(d.topics, key=lambda t: t.topic_name):
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            rows.append(
                {
                    "group": d.group_id,
                    "topic": t.topic_name,
                    "partition": p.partition_index,
                    # -1: no state (the share-partition was never read); shown as "-" as Kafka does.
                    "start-offset": p.start_offset if p.start_offset >= 0 else None,
                    "lag": p.lag if p.lag >= 0 else None,
                    "leader-epoch": p.leader_epoch if p.leader_epoch >= 0 else None,
                    "error": words(p.error_code) if p.error_code else None,
                }
            )
    return rows


def _describe_offsets(o: Output, admin: ShareAdmin, names: list[str], verbose: bool) -> None:
    found = admin.offsets(names) if names else {}
    failures = {g: d for g, d in found.items() if isinstance(d, str)}
    rows = [r for d in found.values() if not isinstance(d, str) for r in _offset_rows(d)]
    columns = ["group", "topic", "partition", "start-offset", "lag"]
    detail = ["leader-epoch"]
    o.result(
        columns + detail if verbose else columns,
        rows,
        errors=group_errors(failures),
        wide_columns=[] if verbose else detail,
    )
    for d in found.values():
        if not isinstance(d, str) and not d.topics:
            o.note(f"share group {d.group_id!r} has no share-partition state yet")
    say_group_failures(failures)
    for r in rows:
        if r["error"]:
            error_line(f"group {r['group']!r}, {r['topic']}-{r['partition']}: {r['error']}")
    if failures or any(r["error"] for r in rows):
        raise typer.Exit(1)


GroupOption = Annotated[str, typer.Option("--group", help="The share group.", show_default=False)]
TopicsOption = Annotated[
    list[str] | None,
    typer.Option("--topic", help="A topic, or topic:0,1,2 for some partitions (repeatable).", show_default=False),
]


@share_groups_app.command("reset-offsets")
def reset_share_offsets(
    group: GroupOption,
    topic: TopicsOption = None,
    all_topics: Annotated[
        bool, typer.Option("--all-topics", help="Every topic the group has share-partition state for.")
    ] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The partitions' log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="The partitions' end.")] = False,
    to_offset: Annotated[
        int | None, typer.Option("--to-offset", help="This offset (kept within the partition's log).")
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            help="The first record at or after YYYY-MM-DDTHH:mm:SS.sss\\[+HH:MM]; without a zone, this machine's"
            " local time (as Kafka's tool).",
        ),
    ] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Apply the plan (otherwise a dry run).")] = False,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Reset a share group's start offsets (AlterShareGroupOffsets), like kafka-share-groups.sh
    --reset-offsets: a dry run unless --execute; the group must have no active members."""
    o = Output.of(fmt, as_json)
    if sum([to_earliest, to_latest, to_offset is not None, to_datetime is not None]) != 1:
        usage("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime")
    when_ms = datetime_ms(to_datetime, o.note) if to_datetime is not None else None
    if bool(topic) == all_topics:
        usage("give --topic (one or more) or --all-topics")
    wanted: dict[str, list[int] | None] = dict(parse_topic_spec(spec) for spec in topic or [])
    admin = ShareAdmin(bootstrap, command_config, timeout)
    current = admin.offsets([group])[group]
    if isinstance(current, str):
        fail(f"group {group!r}: {current}")
    if all_topics:
        wanted = {t.topic_name: sorted(p.partition_index for p in t.partitions) for t in current.topics}
        if not wanted:
            fail(f"share group {group!r} has no share-partition state: name the topics with --topic")
    c = admin.conn
    counts = topic_partitions(c.admin(), c, list(wanted))
    tps = check_partitions(counts, wanted)
    marks = watermarks(c, tps)
    # ListOffsets by timestamp, checked against the records (the local broker answers the log start).
    by_time = offsets_for_time(c, tps, when_ms, marks) if when_ms is not None else {}
    plan: dict[str, dict[int, int]] = {}
    for tp in tps:
        low, high = marks[(tp.topic, tp.partition)]
        if when_ms is not None:
            target = by_time[(tp.topic, tp.partition)]
        else:
            target = low if to_earliest else high if to_latest else min(max(to_offset or 0, low), high)
        plan.setdefault(tp.topic, {})[tp.partition] = target
    errors: dict[tuple[str, int], str] = {}
    if execute:
        answer = admin.alter(group, plan)
        if answer.error_code:
            why = group_words(answer.error_code, answer.error_message)
            fail(f"cannot reset the offsets of share group {group!r}: {why}")
        errors = {
            (t.topic_name, p.partition_index): words(p.error_code)
            for t in answer.responses
            for p in t.partitions
            if p.error_code
        }
    rows = [
        {
            "group": group,
            "topic": t,
            "partition": p,
            "new-offset": offset,
            "error": errors.get((t, p)),
        }
        for t, ps in sorted(plan.items())
        for p, offset in sorted(ps.items())
    ]
    at: dict[str, Any] = {"to_datetime": instant(when_ms)} if when_ms is not None else {}
    o.result(["group", "topic", "partition", "new-offset"], rows, errors=[r for r in rows if r["error"]], **at)
    if when_ms is not None:
        o.note(f"start offsets at the first records at or after {instant(when_ms)}")
    if not execute:
        o.note("dry run: nothing changed (give --execute to apply)")
    for (t, p), why in sorted(errors.items()):
        error_line(f"cannot reset {t}-{p}: {why}")
    if errors:
        raise typer.Exit(1)


@share_groups_app.command("delete-offsets")
def delete_share_offsets(
    group: GroupOption,
    topic: Annotated[list[str], typer.Option("--topic", help="A topic (repeatable).", show_default=False)],
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Delete a share group's offsets (its share-partition state) for topics
    (DeleteShareGroupOffsets), like kafka-share-groups.sh --delete-offsets; the group must have
    no active members."""
    o = Output.of(fmt, as_json)
    admin = ShareAdmin(bootstrap, command_config, timeout)
    names = list(dict.fromkeys(topic))
    answer = admin.delete_offsets(group, names)
    if answer.error_code:
        why = group_words(answer.error_code, answer.error_message)
        fail(f"cannot delete the offsets of share group {group!r}: {why}")
    codes = {t.topic_name: t.error_code for t in answer.responses}
    rows = [
        {
            "group": group,
            "topic": t,
            "deleted": not codes.get(t, 0),
            "error": words(codes[t]) if codes.get(t) else None,
        }
        for t in names
    ]
    o.result(["group", "topic", "deleted", "error"], rows, errors=[r for r in rows if r["error"]])
    for r in rows:
        if r["error"]:
            error_line(f"cannot delete the offsets of topic {r['topic']!r}: {r['error']}")
    if any(r["error"] for r in rows):
        raise typer.Exit(1)
