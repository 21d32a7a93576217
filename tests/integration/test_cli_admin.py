"""``groupcoord groups|offsets|log`` against a running coordinator."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.local_broker import free_port
from tests.inprocess_cli import cli
from tests.integration.serve_process import ServeProcess
from tests.integration.test_cli_ops import make_topic

pytestmark = pytest.mark.integration


def test_inspect_reset_delete_and_dump(bootstrap: str, unique_name: str) -> None:
    serve = ServeProcess(bootstrap, free_port(), unique_name, partitions=1).start()
    t = f"{unique_name}-t"
    try:
        make_topic(bootstrap, t, 2, 10)
        c = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": "ops", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(t, 0, 5), TopicPartition(t, 1, 6)], asynchronous=False)
        c.close()
        listed = json.loads(cli("groups", "list", "-b", serve.bootstrap, "--json").stdout)
        assert {"group": "ops", "type": "classic", "state": "empty", "simple": True} in listed["items"]
        shown = json.loads(cli("offsets", "show", "ops", "-b", serve.bootstrap, "--json").stdout)
        assert [(r["partition"], r["offset"]) for r in shown["items"]] == [(0, 5), (1, 6)]
        reset = cli(
            "offsets", "reset", "--group", "ops", "--topic", t, "--to-offset", "2", "--execute", "-b", serve.bootstrap
        )
        assert reset.returncode == 0, reset.stderr
        shown = json.loads(cli("offsets", "show", "ops", "-b", serve.bootstrap, "--json").stdout)
        assert [r["offset"] for r in shown["items"]] == [2, 2]
        dump = cli("log", "dump", "--partition", "0", "-b", bootstrap, "--topic", unique_name, "--json")
        rows = json.loads(dump.stdout)["items"]
        assert rows[0]["type"] == "SHARD_EPOCH"
        assert [r["value"]["offset"] for r in rows if r["type"] == "OFFSET_COMMIT"] == [5, 6, 2, 2]
        assert cli("groups", "delete", "ops", "-b", serve.bootstrap).returncode == 0
        missing = cli("groups", "delete", "ops", "-b", serve.bootstrap)
        assert missing.returncode == 1 and "cannot delete group 'ops': the group does not exist" in missing.stderr
    finally:
        serve.stop()
