from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.coordinator.config import ConfigError, load_settings


def test_precedence_file_env_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gc.toml"
    config.write_text('log_partitions = 8\nlisten = "127.0.0.1:9500"\n[offsets]\noffsets_retention_minutes = 60\n')
    s = load_settings(config)
    assert (s.log_partitions, s.listen, s.offsets.offsets_retention_minutes) == (8, "127.0.0.1:9500", 60)
    monkeypatch.setenv("GROUPCOORD_LOG_PARTITIONS", "4")
    monkeypatch.setenv("GROUPCOORD_OFFSETS__OFFSET_METADATA_MAX_BYTES", "10")
    s = load_settings(config)
    assert (s.log_partitions, s.offsets.offset_metadata_max_bytes, s.offsets.offsets_retention_minutes) == (4, 10, 60)
    assert load_settings(config, log_partitions=2, listen=None).log_partitions == 2


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"listen": "nowhere"}, "listen: Value error, expected HOST:PORT"),
        ({"log_partitions": 0}, "log_partitions: Input should be greater than or equal to 1"),
        ({"log_level": "LOUD"}, "log_level"),
        ({"bogus": 1}, "bogus: Extra inputs are not permitted"),
    ],
)
def test_bad_values_give_one_readable_line(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, **kwargs)
    message = str(info.value)
    assert needle in message and "\n" not in message


def test_log_level_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(None, log_level="info").log_level == "INFO"
    monkeypatch.setenv("GROUPCOORD_LOG_LEVEL", "Debug")
    assert load_settings(None).log_level == "DEBUG"


def test_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("log_partitions = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(tmp_path / "missing.toml")


def test_shipped_example_configuration_loads() -> None:
    example = Path(__file__).resolve().parents[2] / "deploy" / "groupcoord.example.toml"
    s = load_settings(example)
    assert s.log_replication_factor == 3 and s.listen == "0.0.0.0:9094"


@pytest.mark.parametrize("name", ["metrics_listen", "share_groups_enabled"])
def test_the_example_configuration_shows_a_setting_commented_with_its_default(name: str) -> None:
    """Each a commented line an operator uncomments, with the model's default and a why above it."""
    import tomllib

    from groupcoord.coordinator.config import Settings

    example = Path(__file__).resolve().parents[2] / "deploy" / "groupcoord.example.toml"
    lines = example.read_text().splitlines()
    (number,) = [i for i, line in enumerate(lines) if line.startswith(f"# {name} = ")]
    assert tomllib.loads(lines[number][2:])[name] == Settings.model_fields[name].default
    assert lines[number - 1].startswith("# ") and " = " not in lines[number - 1]
