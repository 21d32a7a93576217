"""What `pipeline import` makes of a failed describe of a group it is about to import into."""

from __future__ import annotations

from confluent_kafka import KafkaError

from groupcoord.pipeline.importer import describe_failure

CONFIG = {"bootstrap.servers": "127.0.0.1:9094"}


def test_librdkafkas_own_timeout_is_no_answer_not_a_new_group() -> None:
    # Its request timeout can fire just before the future's wait ends (seen under load): the dry
    # run then said "would commit" with exit 0 against a sidecar that never answered.
    why = describe_failure(KafkaError(KafkaError._TIMED_OUT), CONFIG, 3, "g")
    assert why == "127.0.0.1:9094 did not answer within 3s (describing g)"


def test_a_local_error_or_a_coordinator_not_serving_stops_the_import() -> None:
    for code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError.COORDINATOR_NOT_AVAILABLE):
        why = describe_failure(KafkaError(code), CONFIG, 3, "g")
        assert why is not None and why.startswith("sidecar cannot describe g: "), (code, why)


def test_a_group_the_sidecar_does_not_know_is_a_new_group() -> None:
    assert describe_failure(KafkaError(KafkaError.GROUP_ID_NOT_FOUND), CONFIG, 3, "g") is None
