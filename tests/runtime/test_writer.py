"""LogWriter's producer settings (what they buy is measured by bench/offsets_bench.py)."""

from __future__ import annotations

from groupcoord.coordinator.runtime.log import LogWriter
from groupcoord.local_broker import free_port


def test_the_writer_lingers_under_a_millisecond() -> None:
    # linger.ms 0 woke librdkafka's broker thread for nearly every record handed over (5.2 us a
    # produce() instead of 1.8 on the local broker); more than a millisecond would be felt by a
    # lone commit (~4 ms acknowledged). No broker is needed to read the settings.
    writer = LogWriter({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, "writer-settings")
    try:
        assert 0 < float(writer.settings["linger.ms"]) <= 1
        assert writer.settings["enable.idempotence"] is True
    finally:
        writer.close(0)
