"""Committed offsets written through librdkafka's AlterConsumerGroupOffsets, asked again while the
group's coordinator moves: what ``offsets reset --execute`` and ``migrate`` write with
(``pipeline import`` does not: the pipeline layer knows nothing of the CLI's).

librdkafka hands a coordinator's NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
COORDINATOR_LOAD_IN_PROGRESS back as the partitions' errors and does not ask again, where Kafka's
admin client looks the coordinator up again and retries (``AlterConsumerGroupOffsetsHandler``). A
sidecar answers those while a group's shard moves between its processes, so a reset run during a
scale-up failed on every partition. Writing the same offsets again is harmless (the request is
idempotent), so the whole request is sent again, with the offset reads' backoff, until the
timeout; then the last answer is the caller's, as before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from tenacity import RetryCallState, Retrying, retry_if_exception, retry_if_result

from groupcoord.cli.offsets_wire import _LEAST_TRY, _WAIT, COORDINATOR_MOVING


def _moving_error(exc: BaseException) -> bool:
    return isinstance(exc, KafkaException) and bool(exc.args) and exc.args[0].code() in COORDINATOR_MOVING


def _moving_partitions(result: Any) -> bool:
    return any(tp.error is not None and tp.error.code() in COORDINATOR_MOVING for tp in result.topic_partitions)


def alter_offsets(admin: AdminClient, group: str, partitions: Sequence[TopicPartition], timeout: float) -> Any:
    """The group's answer to committing ``partitions`` (a ``ConsumerGroupTopicPartitions``, errors
    per partition), once its coordinator has settled or ``timeout`` is spent. Raises what the
    future raises (``KafkaException``, ``TimeoutError``) when that is not a moving coordinator's."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        return deadline - time.monotonic()

    def backoff(state: RetryCallState) -> float:
        return max(0.0, min(_WAIT(state), left() - _LEAST_TRY))

    def once() -> Any:
        wait = max(left(), _LEAST_TRY)
        request = [ConsumerGroupTopicPartitions(group, list(partitions))]
        return admin.alter_consumer_group_offsets(request, request_timeout=wait)[group].result(timeout=wait)

    retrying = Retrying(
        retry=retry_if_exception(_moving_error) | retry_if_result(_moving_partitions),
        wait=backoff,
        stop=lambda _: left() < _LEAST_TRY,
        reraise=True,  # an exception still moving at the deadline is raised as it is
        # partitions still moving at the deadline: their answer is the caller's
        retry_error_callback=lambda state: state.outcome.result(),  # type: ignore[union-attr]
    )
    return retrying(once)
