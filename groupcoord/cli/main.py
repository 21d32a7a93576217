"""The ``groupcoord`` command line."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from pydantic_settings import SettingsError
from rich.console import Console

import groupcoord.cli.reset  # noqa: F401  (registers ``offsets reset``)
from groupcoord.cli.admin import groups_app, offsets_app
from groupcoord.cli.common import CliError, error_line, report
from groupcoord.cli.drill import drill
from groupcoord.cli.log import log_app
from groupcoord.cli.migrate import migrate_app
from groupcoord.cli.pipeline import pipeline_app
from groupcoord.cli.share import share_groups_app
from groupcoord.coordinator.config import ConfigError, load_settings
from groupcoord.local_broker import AddressInUse, BrokerStartError, LocalBroker, parse_hostport


class _App(typer.Typer):
    """Every failure ends as one line on stderr and a non-zero exit code, never a traceback:
    our refusals (``CliError``, exit 1) and bad command lines (exit 2, with a pointer to --help)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            code = super().__call__(*args, **{**kwargs, "standalone_mode": False})
        except CliError as exc:
            try:
                report(exc)
            except typer.Exit as done:
                _leave(done.exit_code)
        except typer.Abort:
            _leave(1)
        except Exception as exc:
            # Usage errors (unknown option, bad value): typer's own exception types, duck-typed so
            # that this holds whichever click typer brings.
            if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
                raise
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
                print(ctx.get_help(), file=sys.stderr)
            else:
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                error_line(f"{exc.format_message()}{hint}")
            _leave(int(exc.exit_code))
        _leave(code if isinstance(code, int) else 0)


def _leave(code: int) -> None:
    # Leave at once: a client with a request still pending may otherwise call back into an
    # interpreter that is shutting down (librdkafka's threads are not ours).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


app = _App(
    help="A sidecar Kafka group coordinator that keeps its state in a compacted topic.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(groups_app, name="groups")
app.add_typer(share_groups_app, name="share-groups")
app.add_typer(offsets_app, name="offsets")
app.add_typer(log_app, name="log")
app.add_typer(migrate_app, name="migrate")
app.add_typer(pipeline_app, name="pipeline")
err = Console(stderr=True)


def fail(message: str) -> None:
    error_line(message)
    raise typer.Exit(2)


def source_commit() -> str | None:
    """The commit of the git checkout this package runs from (an editable install), else None:
    every commit of main says 0.1.0, and an operator rolling an upgrade needs to tell them apart."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _version(value: bool) -> None:
    if value:
        from groupcoord import __version__

        commit = source_commit()
        print(f"groupcoord {__version__}" + (f" (commit {commit})" if commit else ""))
        raise typer.Exit(0)


@app.callback()
def main(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """A sidecar Kafka group coordinator that keeps its state in a compacted topic."""
    # Any log line a command prints is JSON; librdkafka's stay off the terminal (serve reconfigures).
    from groupcoord.coordinator.logs import configure_cli

    configure_cli()


def configure_logging(level: str, fmt: str = "json") -> None:
    from groupcoord.coordinator.logs import configure, limit_client_driven_lines

    configure(level, fmt)
    limit_client_driven_lines()


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
    except SettingsError as exc:  # an environment value that is not valid JSON, for instance
        fail(f"invalid configuration: {exc} ({exc.__cause__})" if exc.__cause__ else f"invalid configuration: {exc}")
    if "log_format" not in settings.model_fields_set:
        from groupcoord.coordinator.logs import default_format

        settings = settings.model_copy(update={"log_format": default_format(sys.stderr)})
    configure_logging(settings.log_level, settings.log_format)
    from groupcoord.coordinator.server import run

    embedded: LocalBroker | None = None
    if settings.bootstrap_servers is None:
        host, port = parse_hostport(settings.embedded_broker_listen, 9092)
        embedded = LocalBroker(host, port)
        try:
            embedded.start()
        except AddressInUse as exc:
            # A first run on a machine where a Kafka (or another serve) already has 9092.
            fail(
                f"embedded broker: {exc}; give it another address with GROUPCOORD_EMBEDDED_BROKER_LISTEN=HOST:PORT"
                " (embedded_broker_listen in --config), or name a cluster with -b"
            )
        except BrokerStartError as exc:
            fail(f"embedded broker: {exc}")
        said = f"embedded broker (in memory, for development): bootstrap.servers={embedded.bootstrap}"
        if settings.log_format == "text":
            # A plain line, not an alarm: it is what a first run is expected to do.
            err.print(said, highlight=False, markup=False, soft_wrap=True)
        else:  # every stderr line of serve is JSON
            logging.getLogger("groupcoord.coordinator.server").warning(said)
        # A copy keeps which settings were given explicitly (serve treats those more strictly).
        settings = settings.model_copy(update={"bootstrap_servers": embedded.bootstrap})
    try:
        code = run(settings, err)
    finally:
        if embedded is not None:
            # serve has stopped by now; the embedded broker's in-memory log goes with it anyway,
            # so Ctrl-C does not wait out Tansu's own 5 s shutdown.
            embedded.stop(graceful=False)
    raise typer.Exit(code)


app.command()(drill)

if __name__ == "__main__":
    app()
