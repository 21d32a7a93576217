"""The deploy files as a cluster and systemd would read them: Kubernetes schemas, the hardening a
restricted namespace demands, the Secret example, and the systemd units (``systemd-analyze``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.packaging.test_dockerfile import ROOT, _settings_from, env

DEPLOY = ROOT / "deploy"
MANIFESTS = sorted(DEPLOY.glob("kubernetes*.yaml"))


def _docs(path: Path) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(path.read_text()) if d}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifests_match_the_kubernetes_schemas(path: Path) -> None:
    """Every resource against the API schemas (shipped with kubernetes-validate, no cluster needed);
    strict: a misspelt or misplaced field is an error, not silently dropped by the API server."""
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_pod_is_hardened_for_a_restricted_namespace() -> None:
    statefulset = _docs(DEPLOY / "kubernetes.yaml")["StatefulSet"]
    pod = statefulset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    # A read-only root still has a writable /tmp.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]
    (spread,) = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert (
        spread["labelSelector"]["matchLabels"].items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()
    )
    # A long first load is no liveness failure: the startup probe allows minutes.
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300


def test_forwarded_broker_ports_are_declared() -> None:
    docs = _docs(DEPLOY / "kubernetes.yaml")
    pinned = tomllib.loads(docs["ConfigMap"]["data"]["groupcoord.toml"])["gateway"]["broker_listen_ports"]
    assert pinned, "the ConfigMap pins no forwarded broker port"
    (container,) = docs["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    declared = {p["containerPort"] for p in container["ports"]}
    served = {p["port"] for p in docs["Service"]["spec"]["ports"]}
    assert set(pinned.values()) <= declared and set(pinned.values()) <= served


def test_secret_example_feeds_real_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    (secret,) = _docs(DEPLOY / "kubernetes-secret.example.yaml").values()
    (container,) = _docs(DEPLOY / "kubernetes.yaml")["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    assert {"secretRef": {"name": secret["metadata"]["name"], "optional": True}} in container["envFrom"]
    variables = secret["stringData"]
    settings = _settings_from({**env(), **variables}, None, monkeypatch)
    assert settings.client["sasl.password"] == variables["GROUPCOORD_CLIENT__SASL.PASSWORD"]
    assert settings.client["security.protocol"] == "SASL_SSL"
    # The CA file it names is inside the mounted TLS Secret.
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    assert any(settings.client["ssl.ca.location"].startswith(m + "/") for m in mounts)


def _metrics_port(unit: str, instance: str) -> int:
    (value,) = re.findall(r"^Environment=GROUPCOORD_METRICS_LISTEN=(\S+)$", unit, re.M)
    return int(value.replace("%i", instance).rsplit(":", 1)[1])


def test_systemd_template_instances_do_not_collide() -> None:
    """The instances of the template's own example: no metrics port is another one's Kafka port."""
    unit = (DEPLOY / "groupcoord@.service").read_text()
    (example,) = re.findall(r"systemctl enable --now ((?:groupcoord@\d+ ?)+)", unit)
    instances = [name.split("@")[1] for name in example.split()]
    assert len(instances) >= 3
    kafka = {int(i) for i in instances}
    metrics = {_metrics_port(unit, i) for i in instances}
    assert len(metrics) == len(instances) and not metrics & kafka
    assert all(0 < port < 65536 for port in metrics | kafka)


UNITS = ("groupcoord.service", "groupcoord@.service")


def _security_verdict(analyze: str, unit: Path) -> str:
    """The last line of ``systemd-analyze security --offline``: '... groupcoord.service: 1.7 OK'."""
    result = subprocess.run(
        [analyze, "security", "--offline=true", "--no-pager", str(unit)], capture_output=True, text=True, timeout=60
    )
    (verdict,) = re.findall(r"Overall exposure level for \S+: ([\d.]+ [A-Z]+)", result.stdout)
    return str(verdict)


@pytest.mark.parametrize("source", UNITS)
def test_systemd_units_are_sandboxed(source: str, tmp_path: Path) -> None:
    """A process that only talks TCP and reads its config runs with the file system read-only,
    no capabilities and a system call filter: systemd's own audit rates it OK (it was 9.2 UNSAFE)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed")
    unit = tmp_path / source
    unit.write_text((DEPLOY / source).read_text())
    level, label = _security_verdict(analyze, unit).split()
    assert label in ("PERFECT", "SAFE", "OK"), f"{source}: exposure {level} {label}"
    # Both units carry the same sandbox: an instance of the template is no weaker than the unit.
    sandbox = {
        line for line in (DEPLOY / UNITS[0]).read_text().splitlines() if line.startswith(("Protect", "Restrict"))
    }
    assert sandbox and sandbox <= set((DEPLOY / source).read_text().splitlines())


def test_systemd_units_name_only_shipped_or_system_units() -> None:
    """A PartOf= or WantedBy= of one of ours names a unit deploy/ ships (or systemd's own): the
    template was PartOf a groupcoord.target nobody shipped, so restarting the group did nothing."""
    system = {"multi-user.target", "network-online.target"}
    for source in (*UNITS, "groupcoord.target"):
        for line in (DEPLOY / source).read_text().splitlines():
            if line.startswith(("PartOf=", "WantedBy=", "After=", "Wants=")):
                for unit in line.split("=", 1)[1].split():
                    assert unit in system or (DEPLOY / unit).is_file(), f"{source}: {line}"
    assert "PartOf=groupcoord.target" in (DEPLOY / "groupcoord@.service").read_text().splitlines()


def test_systemd_units_verify(tmp_path: Path) -> None:
    """``systemd-analyze verify`` on the units, with ExecStart's path pointed at this install."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        # .ci/run installs systemd; a developer machine without it (macOS) skips this one check.
        pytest.skip("systemd-analyze not installed")
    groupcoord = Path(sys.executable).with_name("groupcoord")
    units = []
    for source, name in (
        ("groupcoord.service", "groupcoord.service"),
        ("groupcoord@.service", "groupcoord@9094.service"),
        ("groupcoord.target", "groupcoord.target"),
    ):
        text = (DEPLOY / source).read_text().replace("/opt/groupcoord/.venv/bin/groupcoord", str(groupcoord))
        (tmp_path / name).write_text(text)
        units.append(str(tmp_path / name))
    result = subprocess.run([analyze, "verify", "--man=no", *units], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
