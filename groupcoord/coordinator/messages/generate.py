"""Regenerate the message modules from Kafka's JSON message schemas.

    python -m groupcoord.coordinator.messages.generate SCHEMA_DIR [OUT_DIR]
    ruff format groupcoord/coordinator/messages

SCHEMA_DIR holds ``<Name>Request.json`` / ``<Name>Response.json`` as published by Apache Kafka
(``clients/src/main/resources/common/message``). Only the layout facts are used (names, types,
versions, nullability, tags, defaults); documentation text is dropped. A development tool: the
gateway never reads JSON at run time.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from pathlib import Path
from typing import Any

# module name -> API name, in the order the modules are listed.
MODULES: dict[str, str] = {
    "api_versions": "ApiVersions",
    "find_coordinator": "FindCoordinator",
    "metadata": "Metadata",
    "describe_cluster": "DescribeCluster",
    "offset_commit": "OffsetCommit",
    "offset_fetch": "OffsetFetch",
    "offset_delete": "OffsetDelete",
    "txn_offset_commit": "TxnOffsetCommit",
    "join_group": "JoinGroup",
    "sync_group": "SyncGroup",
    "heartbeat": "Heartbeat",
    "leave_group": "LeaveGroup",
    "list_groups": "ListGroups",
    "describe_groups": "DescribeGroups",
    "delete_groups": "DeleteGroups",
    "consumer_group_heartbeat": "ConsumerGroupHeartbeat",
    "consumer_group_describe": "ConsumerGroupDescribe",
    "share_group_heartbeat": "ShareGroupHeartbeat",
    "share_group_describe": "ShareGroupDescribe",
    "share_fetch": "ShareFetch",
    "share_acknowledge": "ShareAcknowledge",
    "describe_share_group_offsets": "DescribeShareGroupOffsets",
    "alter_share_group_offsets": "AlterShareGroupOffsets",
    "delete_share_group_offsets": "DeleteShareGroupOffsets",
    "describe_configs": "DescribeConfigs",
    "alter_configs": "AlterConfigs",
    "incremental_alter_configs": "IncrementalAlterConfigs",
    # Forwarded APIs decoded only when they name the coordinator's log topic (gateway/protect.py).
    "produce": "Produce",
    "fetch": "Fetch",
    "list_offsets": "ListOffsets",
    "offset_for_leader_epoch": "OffsetForLeaderEpoch",
    "create_topics": "CreateTopics",
    "delete_topics": "DeleteTopics",
    "delete_records": "DeleteRecords",
    "create_partitions": "CreatePartitions",
    "describe_topic_partitions": "DescribeTopicPartitions",
    # Forwarded APIs whose topic fields are read (gateway/named_topics.py) to keep the sidecar's
    # own topics and groups out of reach.
    "add_partitions_to_txn": "AddPartitionsToTxn",
    "write_txn_markers": "WriteTxnMarkers",
    "create_acls": "CreateAcls",
    "delete_acls": "DeleteAcls",
    "alter_replica_log_dirs": "AlterReplicaLogDirs",
    "describe_log_dirs": "DescribeLogDirs",
    "elect_leaders": "ElectLeaders",
    "alter_partition_reassignments": "AlterPartitionReassignments",
    "list_partition_reassignments": "ListPartitionReassignments",
    "describe_quorum": "DescribeQuorum",
    "describe_producers": "DescribeProducers",
}

_PYTHON_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint16": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "uuid": "uuid.UUID",
    "records": "bytes | None",
}
_ZERO = {
    "bool": "False",
    "int8": "0",
    "int16": "0",
    "int32": "0",
    "int64": "0",
    "uint16": "0",
    "float64": "0.0",
    "string": '""',
    "bytes": 'b""',
    "uuid": "ZERO_UUID",
    "records": "None",
}
_COMMENT_LINES = re.compile(r"(?m)^\s*//.*\n?")


def load_schema(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_COMMENT_LINES.sub("", path.read_text()))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    _attach_common(data.get("fields", []), common)
    return data


def _attach_common(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> None:
    for f in fields:
        name = f["type"].removeprefix("[]")
        if name in common and "fields" not in f:
            f["fields"] = common[name]
        if "fields" in f:
            _attach_common(f["fields"], common)


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


def versions_expr(spec: str | None) -> str:
    if spec is None or spec == "none":
        return "NEVER"
    if spec.endswith("+"):
        return f"Versions({int(spec[:-1])})"
    low, _, high = spec.partition("-")
    return f"Versions({int(low)}, {int(high or low)})"


def _default(f: dict[str, Any], kind: str) -> str:
    raw = f.get("default")
    if raw is None:
        return _ZERO[kind]
    text = str(raw).strip()
    if text == "null":
        return "None"
    if kind == "bool":
        return "True" if text == "true" else "False"
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return str(int(text, 0))
    if kind == "float64":
        return repr(float(text))
    if kind == "string":
        return repr(text)
    return _ZERO[kind]


class ModuleWriter:
    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.seen: set[str] = set()
        self.uses_uuid = False
        self.uses_field = False

    def struct(self, message: str, class_name: str, fields: list[dict[str, Any]], top: dict[str, Any] | None) -> None:
        if class_name in self.seen:
            return
        self.seen.add(class_name)
        attrs: list[str] = []
        schema: list[str] = []
        for f in fields:
            attr, entry = self._field(message, f)
            attrs.append(attr)
            schema.append(entry)
        lines = ["@dataclass(kw_only=True, slots=True)", f"class {class_name}({'Message' if top else 'Struct'}):"]
        if top is not None:
            lines.append(f"    API_KEY: ClassVar[int] = {top['apiKey']}")
            lines.append(f"    VALID: ClassVar[Versions] = {versions_expr(top['validVersions'])}")
            lines.append(f"    FLEXIBLE: ClassVar[Versions] = {versions_expr(top['flexibleVersions'])}")
        lines.extend(attrs)
        lines.append(
            "    SCHEMA: ClassVar[tuple[Field, ...]] = (" + ", ".join(schema) + ("," if len(schema) == 1 else "") + ")"
        )
        self.blocks.append("\n".join(lines))

    def _nested_name(self, message: str, struct_name: str) -> str:
        # Kafka reuses short struct names ("Topic", "Partition") across messages; prefixing with
        # the message name keeps every class name unique within the package.
        base = message.removesuffix("Request").removesuffix("Response")
        return struct_name if struct_name.startswith(base) else message + struct_name

    def _field(self, message: str, f: dict[str, Any]) -> tuple[str, str]:
        kind: str = f["type"]
        name = snake(f["name"])
        nullable = f.get("nullableVersions") is not None
        extra = ""
        if nullable:
            extra += f", nullable={versions_expr(f['nullableVersions'])}"
        if f.get("taggedVersions") is not None:
            extra += f", tagged={versions_expr(f['taggedVersions'])}, tag={f['tag']}"
        versions = versions_expr(f["versions"])
        if kind.startswith("[]"):
            inner = kind[2:]
            if inner in _PYTHON_TYPES:
                self.uses_uuid |= inner == "uuid"
                annotation = f"list[{_PYTHON_TYPES[inner]}]"
                entry = f'Field("{name}", "array", {versions}{extra}, item="{inner}")'
            else:
                nested = self._nested_name(message, inner)
                self.struct(message, nested, f["fields"], None)
                annotation = f"list[{nested}]"
                entry = f'Field("{name}", "array", {versions}{extra}, struct={nested})'
            if nullable and str(f.get("default")) == "null":
                return f"    {name}: {annotation} | None = None", entry
            self.uses_field = True
            suffix = " | None" if nullable else ""
            return f"    {name}: {annotation}{suffix} = field(default_factory=list)", entry
        if kind in _PYTHON_TYPES:
            self.uses_uuid |= kind == "uuid"
            annotation = _PYTHON_TYPES[kind]
            if nullable and kind in ("string", "bytes"):
                annotation += " | None"
            default = _default(f, kind)
            return (
                f"    {name}: {annotation} = {default}",
                f'Field("{name}", "{kind}", {versions}{extra}, default={default})',
            )
        nested = self._nested_name(message, kind)
        self.struct(message, nested, f["fields"], None)
        entry = f'Field("{name}", "struct", {versions}{extra}, struct={nested})'
        if nullable:
            return f"    {name}: {nested} | None = None", entry
        self.uses_field = True
        return f"    {name}: {nested} = field(default_factory={nested})", entry


def render_module(api: str, schema_dir: Path) -> str:
    writer = ModuleWriter()
    api_key = -1
    for side in ("Request", "Response"):
        data = load_schema(schema_dir / f"{api}{side}.json")
        api_key = data["apiKey"]
        writer.struct(data["name"], data["name"], data["fields"], data)
    body = "\n\n\n".join(writer.blocks)
    # In the order ruff's isort keeps them (constants first), so a regenerated tree lints clean.
    names = [
        n for n in ("NEVER", "ZERO_UUID", "Field", "Message", "Struct", "Versions") if re.search(rf"\b{n}\b", body)
    ]
    header = [
        f'"""{api} request and response bodies (API key {api_key}), generated from the published Kafka schema."""',
        "",
        "from __future__ import annotations",
        "",
        *(["import uuid"] if writer.uses_uuid else []),
        "from dataclasses import dataclass" + (", field" if writer.uses_field else ""),
        "from typing import ClassVar",
        "",
        "from groupcoord.coordinator.messages.schema import " + ", ".join(names),
    ]
    return "\n".join(header) + "\n\n\n" + body + "\n"


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema_dir = Path(argv[0])
    out_dir = Path(argv[1]) if len(argv) == 2 else Path(__file__).parent
    for module, api in MODULES.items():
        (out_dir / f"{module}.py").write_text(render_module(api, schema_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
