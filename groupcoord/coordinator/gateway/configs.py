"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: GROUP resources here, the rest to the cluster.

A group's dynamic configs (KIP-848) belong to its coordinator, so the GROUP resources of these
requests are answered by the group handler; every other resource (topics, brokers ...) is the
cluster's. A request naming no group is forwarded untouched. One naming both is split in two, and
the two answers are put back together in the request's order. Pure: no I/O here.
"""

from __future__ import annotations

import copy
from collections import defaultdict, deque
from typing import Any

from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from groupcoord.coordinator.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from groupcoord.coordinator.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from groupcoord.coordinator.messages.schema import Message

# ConfigResource.Type.GROUP and TOPIC
GROUP_RESOURCE = 32
TOPIC_RESOURCE = 2

CONFIG_API_KEYS: frozenset[int] = frozenset(
    {ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS}
)

# Request class -> the response list field that answers its ``resources``, one entry per resource.
ANSWER_FIELD: dict[type[Message], str] = {
    DescribeConfigsRequest: "results",
    AlterConfigsRequest: "responses",
    IncrementalAlterConfigsRequest: "responses",
}
RESPONSE_CLASS: dict[type[Message], type[Message]] = {
    DescribeConfigsRequest: DescribeConfigsResponse,
    AlterConfigsRequest: AlterConfigsResponse,
    IncrementalAlterConfigsRequest: IncrementalAlterConfigsResponse,
}


def names_groups(request: Message) -> bool:
    return any(r.resource_type == GROUP_RESOURCE for r in getattr(request, "resources", ()))


def split(request: Message) -> tuple[Message, Message | None]:
    """(the request with only its GROUP resources, the request with the others or None if none)."""
    resources = request.resources  # type: ignore[attr-defined]
    groups = copy.copy(request)
    groups.resources = [r for r in resources if r.resource_type == GROUP_RESOURCE]  # type: ignore[attr-defined]
    others = [r for r in resources if r.resource_type != GROUP_RESOURCE]
    if not others:
        return groups, None
    rest = copy.copy(request)
    rest.resources = others  # type: ignore[attr-defined]
    return groups, rest


def merge(request: Message, parts: list[Message]) -> Message:
    """One answer for ``request`` from the answers of its parts: its resources' answers in
    request order.

    Answers are matched to resources by (type, name): a broker does not promise to keep the
    request's order."""
    field = ANSWER_FIELD[type(request)]
    pending: dict[tuple[int, str], deque[Any]] = defaultdict(deque)
    for part in parts:
        for answer in getattr(part, field):
            pending[(answer.resource_type, answer.resource_name)].append(answer)
    merged = copy.copy(parts[-1]) if parts else RESPONSE_CLASS[type(request)]()
    out = []
    for resource in request.resources:  # type: ignore[attr-defined]
        queue = pending.get((resource.resource_type, resource.resource_name))
        if queue:
            out.append(queue.popleft())
    # Anything answered that matched no resource is kept rather than lost.
    out += [a for queue in pending.values() for a in queue]
    setattr(merged, field, out)
    return merged


def with_resources(request: Message, resources: list[Any]) -> Message:
    part = copy.copy(request)
    part.resources = resources  # type: ignore[attr-defined]
    return part


def refuse_all(request: Message, error_code: int, message: str) -> Message:
    """An answer giving every resource of ``request`` the same error."""
    response = RESPONSE_CLASS[type(request)]()
    field = ANSWER_FIELD[type(request)]
    item_cls = _item_class(response, field)
    answers = [
        item_cls(
            error_code=error_code,
            error_message=message,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
        )
        for r in request.resources  # type: ignore[attr-defined]
    ]
    setattr(response, field, answers)
    return response


def _item_class(response: Message, field: str) -> Any:
    for f in type(response).SCHEMA:
        if f.name == field:
            return f.struct
    raise LookupError(field)
