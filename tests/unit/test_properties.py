"""``--command-config`` files read as Kafka's tools read them, by the CLI and the pipeline alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.properties import PropertiesError, parse_properties


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n"
        "  ! indented comment\n"
        "sasl.username = ops\n"
        "sasl.password: p\\=ss\\\\word\\u00e9\n"  # escaped separator, backslash and a \u escape
        "ssl.ca.location=/etc/kafka/\\\n"  # a continued line, the next one's indent dropped
        "    ca.pem\n"
        "client.id=a\\tb\n"
    )
    assert parse_properties(text) == {
        "sasl.username": "ops",
        "sasl.password": "p=ss\\wordé",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "client.id": "a\tb",
    }


@pytest.mark.parametrize(("text", "line"), [("just words\n", 1), ("a=1\n\n=nokey\n", 3), ("a=1\nb\\\nc\n", 2)])
def test_a_line_without_a_key_and_separator_is_refused(text: str, line: int) -> None:
    with pytest.raises(PropertiesError) as refused:
        parse_properties(text)
    assert refused.value.line == line


def test_the_pipeline_reads_what_the_cli_reads(tmp_path: Path) -> None:
    # The pipeline's reader refused 'key: value', which --command-config of every other command takes.
    from groupcoord.cli.common import read_properties as cli_reader
    from groupcoord.pipeline.cluster import read_properties as pipeline_reader

    props = tmp_path / "client.properties"
    props.write_text("security.protocol: SASL_SSL\nsasl.password=a\\\\b\n")
    assert pipeline_reader(props) == cli_reader(props) == {"security.protocol": "SASL_SSL", "sasl.password": "a\\b"}
