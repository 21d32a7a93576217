"""``/readyz`` says so when placement cannot route every shard, not only when this process's own
shards are loading, and ListGroups answers COORDINATOR_NOT_AVAILABLE then rather than a list that
silently lacks the groups of the shards nobody serves.

Seen on the local broker after graceful restarts: the placement group never completed a
rebalance, no shard had an owner and every FindCoordinator was answered COORDINATOR_NOT_AVAILABLE,
while each process, owning nothing, reported itself ready. Here a member of the placement group
that is not a ``serve`` (a consumer of the log topic in the placement group, which takes shards and
never announces them) stands in for that: the shards it holds have no owner a client can be sent
to until it leaves.
"""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from groupcoord.cli.wire import WireClient
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.observability.placement_health import settle_bound_s
from groupcoord.local_broker import free_port
from tests.ha.sidecars import SESSION_TIMEOUT_MS, Sidecar, readiness, wait_for
from tests.topics import ensure_topic


def _listed(address: str) -> tuple[int, set[str]]:
    with WireClient(address, 10) as client:
        answer = client.call(ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
    assert isinstance(answer, ListGroupsResponse)
    return answer.error_code, {g.group_id for g in answer.groups}


def _commit(address: str, topic: str, groups: list[str]) -> None:
    for group in groups:
        consumer = Consumer({"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        finally:
            consumer.close()


def test_readyz_and_list_groups_while_shards_have_no_owner(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    health = f"127.0.0.1:{free_port()}"
    sidecar = Sidecar(
        bootstrap,
        unique_name,
        tmp_path / "serve.log",
        partitions=4,
        # The intruder below must speak the same assignor (auto picks roundrobin on this broker).
        env={"GROUPCOORD_METRICS_LISTEN": health, "GROUPCOORD_PLACEMENT__ASSIGNMENT_STRATEGY": "roundrobin"},
    ).start()
    stop = threading.Event()
    intruder = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"groupcoord-placement-{unique_name}",
            "partition.assignment.strategy": "roundrobin",
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "enable.auto.commit": False,
        }
    )

    held: list[int] = []

    def member() -> None:
        # Only this thread touches the consumer (librdkafka's assignment() from another thread
        # waits on the poll here).
        intruder.subscribe([unique_name], on_assign=lambda _c, tps: held.extend(tp.partition for tp in tps))
        while not stop.is_set():
            intruder.poll(0.1)

    thread = threading.Thread(target=member, daemon=True)
    closed = False
    try:
        wait_for(lambda: readiness(health)[0] == 200, 60, "the sidecar ready")
        # Groups on every shard (16 of them over 4 shards).
        groups = [f"g{i}" for i in range(16)]
        ensure_topic(bootstrap, f"{unique_name}-data")
        _commit(sidecar.address, f"{unique_name}-data", groups)
        assert _listed(sidecar.address) == (ErrorCode.NONE, set(groups))
        thread.start()
        wait_for(lambda: bool(held), 60, "the intruder to be given shards")
        # Nobody serves the intruder's shards: not listed silently, but a retriable error.
        wait_for(lambda: _listed(sidecar.address)[0] == ErrorCode.COORDINATOR_NOT_AVAILABLE, 30, "ListGroups refused")
        assert _listed(sidecar.address) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, set())
        # Ownerless for longer than any rebalance takes: not ready, and the body says why.
        settle_s = settle_bound_s(SESSION_TIMEOUT_MS / 1000)
        wait_for(lambda: readiness(health)[0] == 503, settle_s + 30, "the sidecar not ready")
        status, body = readiness(health)
        assert status == 503
        problem = str(body.get("placement"))
        assert "without an owner" in problem and all(str(p) in problem for p in held), body
        # Its own shards are fine all along: placement, not loading, is the reason.
        assert all(state == "active" for state in dict(body["shards"]).values()), body  # type: ignore[call-overload]
        stop.set()
        thread.join(10)
        intruder.close()
        closed = True
        wait_for(lambda: readiness(health)[0] == 200, 60, "the sidecar ready again once it owns every shard")
        assert _listed(sidecar.address) == (ErrorCode.NONE, set(groups))
        # Said in the log too, once each way (not only to a readiness probe).
        said = [line for line in sidecar.lines() if line.startswith(("not ready: ", "placement settled"))]
        assert len(said) == 2 and "without an owner" in said[0], said
        assert said[1] == "placement settled: every shard has an owner", said
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(10)
        if not closed:
            intruder.close()
        sidecar.stop()
