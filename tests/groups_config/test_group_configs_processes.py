"""Group configs with two ``groupcoord serve`` processes: an admin request for a group reaches
whichever process the client picked, and is answered by the one owning the group's shard."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from groupcoord.coordinator.messages import describe_configs as dc
from groupcoord.coordinator.messages import incremental_alter_configs as iac
from groupcoord.coordinator.service.partitioning import partition_for
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Sidecar, stop_all, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 4
GROUP_RESOURCE = 32
INTERVAL = "consumer.heartbeat.interval.ms"
RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


@pytest.fixture
def two_sidecars(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[list[Sidecar]]:
    made = [Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", partitions=PARTITIONS) for i in range(2)]
    try:
        for s in made:
            s.start()
        yield made
    finally:
        stop_all(made)


def test_a_group_config_sent_to_a_process_not_owning_the_group_is_relayed_to_its_owner(
    two_sidecars: list[Sidecar], unique_name: str
) -> None:
    first, second = two_sidecars
    wait_for(
        lambda: (
            bool(first.owned() and second.owned()) and sorted(first.owned() | second.owned()) == list(range(PARTITIONS))
        ),
        90,
        "both processes owning shards",
    )
    # A group whose shard the second process owns, asked of the first.
    group = next(
        f"{unique_name}-{i}" for i in range(1000) if partition_for(f"{unique_name}-{i}", PARTITIONS) in second.owned()
    )

    async def main() -> None:
        client = await WireClient.connect("127.0.0.1", first.port)
        try:
            alter = iac.IncrementalAlterConfigsRequest(
                resources=[
                    iac.IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=GROUP_RESOURCE,
                        resource_name=group,
                        configs=[iac.IncrementalAlterConfigsRequestAlterableConfig(name=INTERVAL, value="6000")],
                    )
                ]
            )
            # Until the first process has seen who owns the shard it answers NOT_COORDINATOR, as
            # FindCoordinator would answer "not available": retriable.
            deadline = time.monotonic() + 60
            while True:
                answer = await client.call(44, 0, alter)
                assert isinstance(answer, iac.IncrementalAlterConfigsResponse)
                if answer.responses[0].error_code not in RETRIABLE or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
            assert [(r.error_code, r.resource_name) for r in answer.responses] == [(0, group)]
            describe = dc.DescribeConfigsRequest(
                resources=[
                    dc.DescribeConfigsResource(
                        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=None
                    )
                ]
            )
            described = await client.call(32, 1, describe)
            assert isinstance(described, dc.DescribeConfigsResponse)
            values = {c.name: (c.value, c.config_source) for c in described.results[0].configs}
            assert values[INTERVAL] == ("6000", 8)
        finally:
            await client.close()

    asyncio.run(main())
    # The owner stored it: asked directly, it answers the same.
    admin = AdminClient({"bootstrap.servers": second.address})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    entry = future.result(15)[INTERVAL]
    assert (entry.value, entry.source) == ("6000", ConfigSource.GROUP_CONFIG.value)
