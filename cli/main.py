"""The ``groupcoord`` command line."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console

from cli.admin import groups_app, offsets_app
from cli.drill import drill
from cli.log import log_app
from coordinator.config import ConfigError, Settings, load_settings
from deploy.local_broker import BrokerStartError, LocalBroker, parse_hostport

app = typer.Typer(
    help="A sidecar Kafka group coordinator that keeps its state in a compacted topic.", no_args_is_help=True
)
app.add_typer(groups_app, name="groups")
app.add_typer(offsets_app, name="offsets")
app.add_typer(log_app, name="log")
err = Console(stderr=True)


def fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level),
        format='{"ts":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":%(message)r}',
        stream=sys.stderr,
    )


@app.command()
def broker(
    listen: Annotated[str, typer.Option(help="HOST:PORT to listen on.")] = "127.0.0.1:9092",
) -> None:
    """Run the local development broker (Tansu, in memory) in the foreground."""
    try:
        host, port = parse_hostport(listen, 9092)
    except ValueError as exc:
        fail(str(exc))
    local = LocalBroker(host, port, die_with_parent=True)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        # Only pass the signal on: the main thread is inside wait() and sees the child exit.
        nonlocal stopping
        stopping = True
        if local.process is not None:
            local.process.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        local.start()
    except BrokerStartError as exc:
        fail(str(exc))
    print(f"bootstrap.servers={local.bootstrap}", flush=True)
    code = local.wait()
    if not stopping:
        fail(f"broker exited unexpectedly with code {code}")


@app.command()
def serve(
    bootstrap_servers: Annotated[
        str | None, typer.Option("--bootstrap-servers", "-b", help="Backing cluster; omit to start an embedded broker.")
    ] = None,
    listen: Annotated[str | None, typer.Option(help="HOST:PORT for Kafka clients.")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="TOML configuration file.")] = None,
    partitions: Annotated[int | None, typer.Option(help="Log topic partitions (at creation).")] = None,
    replication_factor: Annotated[int | None, typer.Option(help="Log topic replication factor (at creation).")] = None,
    log_topic: Annotated[str | None, typer.Option(help="Name of the log topic.")] = None,
) -> None:
    """Run the coordinator: load every shard from the log, then serve Kafka clients."""
    try:
        settings = load_settings(
            config,
            bootstrap_servers=bootstrap_servers,
            listen=listen,
            log_partitions=partitions,
            log_replication_factor=replication_factor,
            log_topic=log_topic,
        )
    except ConfigError as exc:
        fail(str(exc))
    configure_logging(settings.log_level)
    from coordinator.server import run

    embedded: LocalBroker | None = None
    if settings.bootstrap_servers is None:
        host, port = parse_hostport(settings.embedded_broker_listen, 9092)
        embedded = LocalBroker(host, port)
        try:
            embedded.start()
        except BrokerStartError as exc:
            fail(f"embedded broker: {exc}")
        err.print(f"embedded broker: bootstrap.servers={embedded.bootstrap}", highlight=False)
        settings = Settings(**{**settings.model_dump(), "bootstrap_servers": embedded.bootstrap})
    try:
        code = run(settings, err)
    finally:
        if embedded is not None:
            embedded.stop()
    raise typer.Exit(code)


app.command()(drill)

if __name__ == "__main__":
    app()
