"""``groupcoord serve``: assemble the runtime, the service and the gateway, and run until told to stop."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

from confluent_kafka import KafkaException
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coordinator.config import Settings
from coordinator.gateway.config import GatewayConfig
from coordinator.gateway.server import GatewayServer
from coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from coordinator.runtime.log import LogTopicSpec
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.shard import ShardStatus
from coordinator.security.authorizer import AclAuthorizer, AclError, ClusterAclSource, load_acl_file
from coordinator.service.gateway_handler import CoordinatorApiHandler
from coordinator.service.metadata_cache import MetadataCache, TopicInfo
from coordinator.service.secured_handler import SecuredHandler
from coordinator.service.service import GroupCoordinatorService
from deploy.local_broker import parse_hostport


def run(settings: Settings, console: Console) -> int:
    """Run until SIGINT/SIGTERM; returns the process exit code."""
    return asyncio.run(_serve(settings, console))


async def _load_with_progress(runtime: CoordinatorRuntime[GroupCoordinatorState], console: Console) -> None:
    started = time.perf_counter()
    with Progress(
        TextColumn("loading shards"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("load", total=len(runtime.shards))
        while True:
            done = sum(1 for s in runtime.shards.values() if s.status is not ShardStatus.LOADING)
            progress.update(task, completed=done)
            if done == len(runtime.shards):
                break
            await asyncio.sleep(0.05)
    table = Table(title=f"shards of {runtime.topic} loaded in {time.perf_counter() - started:.2f}s")
    for column in ("shard", "status", "records", "seconds", "records/s", "epoch"):
        table.add_column(column, justify="right")
    for partition, shard in sorted(runtime.shards.items()):
        r = shard.load_report
        if r is None:
            table.add_row(str(partition), shard.status.value, "-", "-", "-", "-")
            continue
        rate = r.records / r.seconds if r.seconds > 0 else 0.0
        table.add_row(
            str(partition), shard.status.value, str(r.records), f"{r.seconds:.3f}", f"{rate:,.0f}", str(r.epoch)
        )
    console.print(table)
    for partition, shard in sorted(runtime.shards.items()):
        if shard.status is ShardStatus.FAILED:
            console.print(f"[red]shard {partition} failed to load:[/red] {shard.error}", highlight=False)


async def _authorization(
    settings: Settings, client_config: dict[str, Any]
) -> tuple[AclAuthorizer | None, ClusterAclSource | None]:
    """The ACL authorizer (only when authentication is required) and, for cluster ACLs, its refresher."""
    if settings.gateway.authentication != "required":
        return None, None
    config = settings.gateway.authorization
    authorizer = AclAuthorizer(super_users=config.super_users)
    if config.acls == "file":
        if config.acl_file is None:
            raise AclError("gateway.authorization.acls = 'file' needs gateway.authorization.acl_file")
        authorizer.replace(load_acl_file(config.acl_file))
        return authorizer, None
    source = ClusterAclSource(client_config, authorizer, config.refresh_interval_ms / 1000)
    try:
        await source.refresh()
    except Exception as exc:  # KafkaException, or a timeout: either way the sidecar cannot authorize
        raise AclError(
            f"cannot read ACLs from the cluster (DescribeAcls): {exc}; a cluster without an authorizer needs "
            "gateway.authorization.acls = 'file'"
        ) from exc
    source.start()
    return authorizer, source


async def _serve(settings: Settings, console: Console) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    client_config = settings.client_config()
    metadata = MetadataCache(client_config, settings.metadata_refresh_interval_ms / 1000)
    handlers = GroupCoordinatorShard(
        offsets_config=settings.offsets,
        classic_config=settings.classic_group_config(),
        consumer_config=settings.consumer_group_config(),
        metadata=lambda: metadata.image,
    )
    runtime: CoordinatorRuntime[GroupCoordinatorState] = CoordinatorRuntime(
        client_config,
        LogTopicSpec(
            name=settings.log_topic,
            partitions=settings.log_partitions,
            replication_factor=settings.log_replication_factor,
        ),
        handlers,
        owner_id=settings.owner_id,
    )
    try:
        await runtime.start()
    except KafkaException as exc:
        console.print(f"[red]error:[/red] cannot reach the cluster or create the log topic: {exc}", highlight=False)
        return 1
    gateway: GatewayServer | None = None
    acl_source: ClusterAclSource | None = None
    try:
        await _load_with_progress(runtime, console)
        service = GroupCoordinatorService(runtime, handlers)

        async def drop_offsets(deleted: list[TopicInfo]) -> None:
            await service.topics_deleted([(t.name, t.id_string) for t in deleted])

        metadata.on_topics_deleted(drop_offsets)
        await metadata.refresh()
        metadata.start()
        host, port = parse_hostport(settings.listen, 9094)
        try:
            authorizer, acl_source = await _authorization(settings, client_config)
        except (AclError, KafkaException, OSError) as exc:
            console.print(f"[red]error:[/red] {exc}", highlight=False)
            return 1
        gateway = GatewayServer(
            GatewayConfig(
                bootstrap_servers=client_config["bootstrap.servers"],
                listen_host=host,
                listen_port=port,
                advertised_host=settings.advertised_host,
                protected_topics=[settings.log_topic],
                **settings.gateway.model_dump(exclude={"authorization"}),
            ),
            SecuredHandler(
                CoordinatorApiHandler(service, metadata), metadata, authorizer, frozenset({settings.log_topic})
            ),
        )
        log_topic_id = await metadata.uuid_of(settings.log_topic)
        if log_topic_id is not None:
            gateway.protected.add_id(log_topic_id)
        try:
            await gateway.start()
        except OSError as exc:
            console.print(f"[red]error:[/red] cannot listen on {settings.listen}: {exc.strerror}", highlight=False)
            return 1
        print(f"listening on {host}:{gateway.port}", flush=True)
        await stop.wait()
        return 0
    finally:
        if gateway is not None:
            await gateway.stop()
        if acl_source is not None:
            await acl_source.stop()
        await metadata.stop()
        await runtime.close()
