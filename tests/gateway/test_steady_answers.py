"""A steady heartbeat's answer given again to the same frame without the handler chain
(``groupcoord.coordinator.steady_answers``), through ``serve``'s real chain over one shard on the
simulated log: a repeat gets the same answer with its own correlation id and moves the member's
session timer, and the answer stops standing the moment anything it rests on changes (the group,
the topic metadata, the ACLs, the shard, a stop beginning), so the repeat goes through the group
logic again."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from groupcoord.coordinator.gateway import connection as connection_module
from groupcoord.coordinator.gateway.connection import ClientConnection
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.groups import routing as group_routing
from groupcoord.coordinator.groups.consumer.timers import session_key
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.observability.gateway import _api
from groupcoord.coordinator.runtime.shard import ShardPhase
from groupcoord.coordinator.security.authorizer import (
    Acl,
    AclAuthorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from tests.sim.kernel import sim_loop
from tests.sim.serve_chain import GROUP, HB_KEY, HB_VERSION, TOPIC, World

MEMBERS, PARTITIONS = 3, 6
GROUP_AUTHORIZATION_FAILED = 30


def _frame(member: str, epoch: int, correlation_id: int) -> bytes:
    request = ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=epoch)
    # The client id the world's members joined with: another would be new member metadata.
    return encode_request(RequestHeader(HB_KEY, HB_VERSION, correlation_id, "bench"), request)[4:]


_later: list[Coroutine[Any, Any, bytes]] = []
_patches = pytest.MonkeyPatch()


@pytest.fixture(autouse=True)
def _answered_later(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The simulated loop runs no tasks: an answer that waits for its records (the connection
    spawns a task for it) is kept here and driven by ``_answer`` instead."""

    def spawn(coro: Coroutine[Any, Any, bytes]) -> asyncio.Future[bytes]:
        _later.append(coro)
        done: asyncio.Future[bytes] = asyncio.Future(loop=sim_loop())
        done.set_result(b"")
        return done

    monkeypatch.setattr(connection_module, "spawn", spawn)
    yield
    _patches.undo()
    for coro in _later:
        coro.close()
    _later.clear()


def _topic_id(world: World) -> str:
    topic = world.image.topic(TOPIC)
    assert topic is not None
    return topic.topic_id


class Counted:
    """The group logic of a ConsumerGroupHeartbeat, counting its calls from now on."""

    def __init__(self) -> None:
        self.calls = 0
        logic = group_routing.consumer_group_heartbeat

        def counted(*args: Any) -> Any:
            self.calls += 1
            return logic(*args)

        _patches.setattr(group_routing, "consumer_group_heartbeat", counted)


def _answer(world: World, conn: ClientConnection, frame: bytes) -> tuple[int, ConsumerGroupHeartbeatResponse]:
    """The answer to ``frame`` offered at once: written then, or once its records are read back."""
    written_before = conn.stream.written  # type: ignore[attr-defined]
    assert conn._answer_at_once(frame)
    if _later:
        assert conn.stream.written == written_before  # type: ignore[attr-defined]
        written = _drive(world, _later.pop())
        conn.queue.get_nowait()  # what the connection's writer takes
        conn.outstanding -= 1
    else:
        written = conn.stream.last  # type: ignore[attr-defined]
    correlation_id, body = decode_response(HB_KEY, HB_VERSION, written[4:])
    assert isinstance(body, ConsumerGroupHeartbeatResponse)
    return correlation_id, body


def _drive(world: World, coro: Coroutine[Any, Any, bytes]) -> bytes:
    """Run ``coro`` to its end, the simulated loop running whenever it waits."""
    try:
        while True:
            waiting = coro.send(None)
            while not waiting.done():
                world.run(10)
    except StopIteration as end:
        return end.value  # type: ignore[no-any-return]


def _steady(authorizer: AclAuthorizer | None = None) -> tuple[World, ClientConnection, str, int, Counted]:
    """A converged group; one member's connection has had its steady heartbeat answered once."""
    world = World(MEMBERS, PARTITIONS, authorizer=authorizer)
    member, epoch = next(iter(world.members.items()))
    conn = world.connections(1)[0]
    _, first = _answer(world, conn, _frame(member, epoch, 1))
    assert first.error_code == 0 and first.member_epoch == epoch and first.assignment is None
    return world, conn, member, epoch, Counted()


def test_a_repeat_is_answered_again_without_the_group_logic() -> None:
    world, conn, member, epoch, logic = _steady()
    responses = _api(HB_KEY).responses
    before = responses.get("NONE", 0)
    for correlation_id in (2, 3, 4):
        got, body = _answer(world, conn, _frame(member, epoch, correlation_id))
        assert got == correlation_id
        assert body == ConsumerGroupHeartbeatResponse(
            member_id=member, member_epoch=epoch, heartbeat_interval_ms=body.heartbeat_interval_ms
        )
        assert body.heartbeat_interval_ms > 0
    assert logic.calls == 0
    # Counted as answered, as the chain counts them.
    assert responses.get("NONE", 0) == before + 3


def test_repeats_move_the_session_timer_and_keep_the_member() -> None:
    world, conn, member, epoch, _ = _steady()
    timeout = world.handlers.consumer_config.session_timeout_ms
    for correlation_id in range(2, 12):
        world.loop.clock.advance(timeout // 3)
        world.run(0)  # the silent members' sessions end meanwhile: their removal is written
        sent = world.loop.clock.now_ms()
        _, body = _answer(world, conn, _frame(member, epoch, correlation_id))
        assert body.error_code == 0
        epoch = body.member_epoch  # moved on by their removal: the member's next heartbeat says so
        timer = world.shard._timers[session_key(GROUP, member)]
        assert sent + timeout <= timer.deadline_ms <= world.loop.clock.now_ms() + timeout
    # Over three session timeouts of repeats alone: still a member, while the others (silent) are gone.
    group = world.shard.live.consumer.group(GROUP)
    assert group is not None and list(group.members) == [member]


def test_a_change_of_the_group_sends_the_repeat_through_the_logic_again() -> None:
    world, conn, member, epoch, _ = _steady()
    joined = world._send(World.joins(MEMBERS + 1)[MEMBERS:])  # one more member: a new group epoch
    assert joined[0].error_code == 0
    logic = Counted()
    world.loop.clock.advance(1500)  # past the assignment interval
    world.run(0)
    _, body = _answer(world, conn, _frame(member, epoch, 2))
    assert logic.calls == 1
    assert body.error_code == 0 and body.member_epoch > epoch


def test_new_topic_metadata_sends_the_repeat_through_the_logic_again() -> None:
    world, conn, member, epoch, logic = _steady()
    world.image = TopicsImage.of([TopicImage(TOPIC, _topic_id(world), PARTITIONS * 2)])
    world.loop.clock.advance(1500)
    world.run(0)
    _, body = _answer(world, conn, _frame(member, epoch, 2))
    assert logic.calls == 1
    assert body.member_epoch > epoch


def test_a_revoked_acl_refuses_the_repeat() -> None:
    allow = Acl(ResourceType.GROUP, GROUP, PatternType.LITERAL, "User:ANONYMOUS", "*", Operation.READ, Permission.ALLOW)
    authorizer = AclAuthorizer([allow])
    world, conn, member, epoch, _ = _steady(authorizer)
    assert _answer(world, conn, _frame(member, epoch, 2))[1].error_code == 0
    authorizer.replace([])
    assert _answer(world, conn, _frame(member, epoch, 3))[1].error_code == GROUP_AUTHORIZATION_FAILED


def test_a_shard_that_stopped_serving_refuses_the_repeat() -> None:
    world, conn, member, epoch, _ = _steady()
    world.shard._transition_to(ShardPhase.FENCED, "another owner")
    _, body = _answer(world, conn, _frame(member, epoch, 2))
    assert body.error_code != 0


def test_a_stop_beginning_hands_the_repeat_to_the_relay() -> None:
    world, conn, member, epoch, logic = _steady()
    world.relay.enabled = True
    world.relay._stopping = frozenset({world.service.partition_for(GROUP)})
    # Not answered at once: left to the reader, whose ``handle`` relays it once the shard moved.
    assert not conn._answer_at_once(_frame(member, epoch, 2))
    assert logic.calls == 0


def test_another_frame_on_the_connection_is_not_given_the_answer() -> None:
    world, conn, member, epoch, logic = _steady()
    _, body = _answer(world, conn, _frame(member, epoch + 1, 2))  # a wrong epoch: fenced
    assert logic.calls == 1 and body.error_code != 0


def test_the_answer_stands_again_once_the_logic_gave_it_again() -> None:
    world, conn, member, epoch, logic = _steady()
    world.image = TopicsImage.of([TopicImage(TOPIC, _topic_id(world), PARTITIONS)])
    for correlation_id in range(2, 5):
        _, body = _answer(world, conn, _frame(member, epoch, correlation_id))
        assert body.member_epoch == epoch and body.error_code == 0
    # The image changed object but not content: the logic ran once, then the answer stood again.
    assert logic.calls == 1
