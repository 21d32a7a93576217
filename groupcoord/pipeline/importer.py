"""Bulk offset import into a running sidecar through its normal commit path.

Offsets are committed with confluent-kafka's AlterConsumerGroupOffsets, which is an OffsetCommit
request with no member (generation -1): the sidecar validates and writes it exactly like any
admin commit. Groups that have members are refused (their members own their offsets), as Kafka's
own tools do; the check is made on the sidecar (DescribeGroups / ConsumerGroupDescribe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.pipeline.cluster import kafka_client_config


class ImportError_(RuntimeError):  # noqa: N801 - ImportError is Python's own
    """The sidecar could not be asked or refused the whole import."""


@dataclass
class GroupImport:
    group: str
    offsets: list[tuple[str, int, int, str]]  # topic, partition, offset, metadata
    refusal: str | None = None
    failures: list[str] = field(default_factory=list)


def _admin(config: Mapping[str, Any]) -> AdminClient:
    return AdminClient({**kafka_client_config(config), "socket.timeout.ms": 10000})


def _no_answer(config: Mapping[str, Any], timeout: float, group: str) -> str:
    where = config.get("bootstrap.servers", "the sidecar")
    return f"{where} did not answer within {timeout:g}s (describing {group})"


def describe_failure(error: KafkaError, config: Mapping[str, Any], timeout: float, group: str) -> str | None:
    """Why an import cannot go on after describing ``group`` failed, or None for a group the
    sidecar does not know (a new group: nothing to refuse)."""
    if error.code() == KafkaError._TIMED_OUT:
        # librdkafka's own request timeout can fire just before the future's wait ends: the same
        # silence, not an answer (it was once taken for a new group, and the dry run "would commit").
        return _no_answer(config, timeout, group)
    if error.code() < 0 or error.code() in (
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    ):
        # A local error (no broker reachable, transport) or a coordinator not serving yet: nothing
        # is known of the group's members.
        return f"sidecar cannot describe {group}: {error.str()}"
    return None


def import_plan(
    config: Mapping[str, Any], offsets: Mapping[str, Sequence[tuple[str, int, int, str]]], timeout: float = 30.0
) -> list[GroupImport]:
    """One entry per group, refused if the sidecar reports members in it (answers awaited ``timeout`` s)."""
    plan = [GroupImport(g, sorted(offsets[g])) for g in sorted(offsets)]
    for entry in plan:
        negative = [f"{t}-{p} at {o}" for t, p, o, _ in entry.offsets if p < 0 or o < 0]
        if negative:
            # No commit can carry one (a snapshot row of an offset -1 committed by some client).
            entry.refusal = f"refused: negative partition or offset ({', '.join(negative[:3])})"
    if not plan:
        return plan
    admin = _admin(config)
    futures = admin.describe_consumer_groups([g.group for g in plan], request_timeout=timeout)
    for entry in plan:
        try:
            described = futures[entry.group].result(timeout=timeout)
        except KafkaException as exc:
            refused = describe_failure(exc.args[0], config, timeout, entry.group)
            if refused is not None:
                raise ImportError_(refused) from None
            continue  # GROUP_ID_NOT_FOUND and the like: a new group, nothing to refuse
        except TimeoutError:
            raise ImportError_(_no_answer(config, timeout, entry.group)) from None
        except Exception as exc:
            raise ImportError_(f"sidecar did not answer for {entry.group}: {exc!r}") from None
        if described.members and entry.refusal is None:
            entry.refusal = f"refused: {len(described.members)} active members"
    # (After the groups: a sidecar that does not answer is said as such, by the describe.)
    _refuse_unknown_partitions(admin, plan, config, timeout)
    return plan


def _refuse_unknown_partitions(
    admin: AdminClient, plan: Sequence[GroupImport], config: Mapping[str, Any], timeout: float
) -> None:
    """Refuse, whole, a group naming a topic or partition the cluster does not have: the dry run
    says so, and an execute commits none of the group's offsets (its commit would be refused per
    partition, after the others were written)."""
    try:
        topics = admin.list_topics(timeout=timeout).topics
    except KafkaException as exc:
        raise ImportError_(f"cannot list the cluster's topics through the sidecar: {exc.args[0].str()}") from None
    for entry in plan:
        if entry.refusal is not None:
            continue
        unknown = [
            f"{t}-{p}"
            for t, p, _, _ in entry.offsets
            if t not in topics or topics[t].error is not None or p not in topics[t].partitions
        ]
        if unknown:
            entry.refusal = (
                f"refused: no such topic or partition ({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''})"
            )


_WRITE_TIMEOUT_S = 60.0  # per request of ``batch_size`` partitions


def run_import(config: Mapping[str, Any], plan: Sequence[GroupImport], batch_size: int) -> dict[str, int]:
    """Commit every non-refused group's offsets, ``batch_size`` partitions per request; failures per group."""
    admin = _admin(config)
    failed: dict[str, int] = {}
    for entry in plan:
        if entry.refusal:
            continue
        failed[entry.group] = 0
        for i in range(0, len(entry.offsets), batch_size):
            chunk = entry.offsets[i : i + batch_size]
            partitions = [TopicPartition(t, p, o, metadata=m) if m else TopicPartition(t, p, o) for t, p, o, m in chunk]
            request = [ConsumerGroupTopicPartitions(entry.group, partitions)]
            try:
                future = admin.alter_consumer_group_offsets(request, request_timeout=_WRITE_TIMEOUT_S / 2)
                result = future[entry.group].result(timeout=_WRITE_TIMEOUT_S)
            except KafkaException as exc:
                entry.failures.append(exc.args[0].str())
                failed[entry.group] += len(chunk)
                continue
            except TimeoutError:  # perhaps written: counted as failed, the import can be run again
                entry.failures.append(f"no answer within {_WRITE_TIMEOUT_S:g}s")
                failed[entry.group] += len(chunk)
                continue
            for tp in result.topic_partitions:
                if tp.error is not None:
                    entry.failures.append(f"{tp.topic}-{tp.partition}: {tp.error}")
                    failed[entry.group] += 1
    return failed
