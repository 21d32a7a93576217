"""A group config request sent to a process that does not know the group's owner yet (placement
learns it from its directory a moment after a start or a move) waits for it and is relayed, rather
than answered NOT_COORDINATOR at once: admin clients do not retry that for group configs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from groupcoord.coordinator.gateway import group_configs
from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.configs import GROUP_RESOURCE
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import CoordinatorAddress
from groupcoord.coordinator.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)

UNKNOWN = CoordinatorAddress(-1, "", -1, group_configs.COORDINATOR_NOT_AVAILABLE, "shard owner not known yet")
OWNER = CoordinatorAddress(2, "127.0.0.1", 19094)


@dataclass
class _Locator:
    unknown_for: int  # calls answered "not known yet" before the owner is known
    calls: int = 0

    def locate(self, group_id: str) -> CoordinatorAddress:
        self.calls += 1
        return UNKNOWN if self.calls <= self.unknown_for else OWNER


@dataclass
class _Gateway:
    locator: _Locator
    config: GatewayConfig = field(
        default_factory=lambda: GatewayConfig(bootstrap_servers=["127.0.0.1:1"], listen_port=0, coordinator_node_id=1)
    )


def _request() -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(
        resources=[IncrementalAlterConfigsRequestAlterConfigsResource(resource_type=GROUP_RESOURCE, resource_name="g")]
    )


def _split(gateway: Any) -> tuple[Any, list[tuple[tuple[str, int], Any]]]:
    header = RequestHeader(44, 1, 7, "client")
    return asyncio.run(group_configs._by_owner(gateway, header, _request()))


def test_an_owner_learnt_a_moment_later_gets_the_request_relayed() -> None:
    local, remote = _split(_Gateway(_Locator(unknown_for=3)))
    assert local is None
    assert [address for address, _ in remote] == [(OWNER.host, OWNER.port)]


def test_an_owner_still_unknown_after_the_wait_leaves_the_answer_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_configs, "OWNER_LOOKUP_S", 0.2)
    locator = _Locator(unknown_for=10**6)
    local, remote = _split(_Gateway(locator))
    assert remote == [] and local is not None and [r.resource_name for r in local.resources] == ["g"]
    assert locator.calls > 1  # it looked again while it waited
