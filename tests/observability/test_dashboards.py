"""deploy/prometheus/scrape.yaml and deploy/grafana/groupcoord.json against the metrics a process
really exports: every series a panel queries exists (after the relabelling), the lag reads as
kafka_exporter's ``kafka_consumergroup_lag{consumergroup,topic,partition}``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from groupcoord.coordinator.observability import gateway
from groupcoord.coordinator.observability.lag import LagMonitor
from groupcoord.coordinator.observability.metrics import shard_families
from groupcoord.coordinator.observability.registry import REGISTRY

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "info": ("_info",)}


def exported() -> dict[str, set[str]]:
    """Every series name a process exports, with the label names each has."""
    monitor = LagMonitor({"bootstrap.servers": "127.0.0.1:1"}, lambda limit: ([], 0), 60, 10)
    gateway.request(18)  # an ApiVersions request: the gateway's families then have their labels
    out: dict[str, set[str]] = {}
    for family in [*REGISTRY.collect(), *shard_families([]), *monitor.describe()]:
        for suffix in _SUFFIXES.get(family.type, ("",)):
            out[family.name + suffix] = {k for s in family.samples for k in s.labels}
    out["groupcoord_consumergroup_lag"] = {"consumergroup", "topic", "partition"}  # labels of LagMonitor's family
    return out


def relabel(name: str) -> str:
    """The scrape snippet's metric_relabel_configs applied to a series name."""
    (job,) = yaml.safe_load((DEPLOY / "prometheus" / "scrape.yaml").read_text())["scrape_configs"]
    for rule in job["metric_relabel_configs"]:
        assert rule["source_labels"] == ["__name__"] and rule["target_label"] == "__name__"
        if re.fullmatch(rule["regex"], name):
            name = rule["replacement"]
    return name


def test_relabelling_gives_the_lag_kafka_exporters_name() -> None:
    names = exported()
    assert relabel("groupcoord_consumergroup_lag") == "kafka_consumergroup_lag"
    assert names["groupcoord_consumergroup_lag"] == {"consumergroup", "topic", "partition"}
    assert {relabel(n) for n in names} - set(names) == {"kafka_consumergroup_lag"}  # nothing else renamed


def test_every_panel_queries_exported_series() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "groupcoord.json").read_text())
    available = {relabel(n): labels for n, labels in exported().items()}
    queried = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"\b((?:groupcoord|kafka)_[a-z_]+)\b", target["expr"]):
                assert name in available, (panel["title"], name)
                queried.add(name)
            for label in re.findall(r"by \(([^)]*)\)", target["expr"]):
                used = {part.strip() for part in label.split(",")} - {"le"}
                names = re.findall(r"\b((?:groupcoord|kafka)_[a-z_]+)\b", target["expr"])
                assert used <= set().union(*(available[n] for n in names)), (panel["title"], used)
    assert {"kafka_consumergroup_lag", "groupcoord_event_processing_time_seconds_bucket"} <= queried
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["consumergroup"]["query"] == "label_values(kafka_consumergroup_lag, consumergroup)"
