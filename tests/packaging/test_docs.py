"""The documentation site builds with --strict (a broken link or anchor, a page missing from the
nav, a failing generator hook: any warning fails), and the generated references cover the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.packaging.test_dockerfile import ROOT


def test_docs_build_strict_without_warnings(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    # The hook filled both generated pages: every command's help, every setting (with its env name).
    cli = (site / "cli" / "index.html").read_text()
    assert "groupcoord log skip" in cli and "groupcoord pipeline audit" in cli and "<!-- cli-reference -->" not in cli
    config = (site / "configuration" / "index.html").read_text()
    for name in ("GROUPCOORD_EMBEDDED_BROKER_LISTEN", "GROUPCOORD_OWNER_ID", "GROUPCOORD_GATEWAY__AUTHORIZATION__ACLS"):
        assert name in config, name
    assert "<!-- config-reference -->" not in config


def test_every_setting_is_in_the_configuration_reference() -> None:
    """Each setting of the model, nested ones included, has a row with its env name and a description."""
    from pydantic import BaseModel

    from groupcoord.coordinator.config import ENV_PREFIX, Settings

    sys.path.insert(0, str(ROOT / "docs"))
    from gen_reference import config_reference

    page = config_reference()
    rows = {line.split(" | ")[1].strip("`"): line for line in page.splitlines() if line.startswith("| `")}

    def walk(model: type[BaseModel], env: str) -> None:
        for name, field in model.model_fields.items():
            var = f"{env}{name.upper()}"
            nested = [
                t
                for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
                if isinstance(t, type) and issubclass(t, BaseModel)
            ]
            if nested:
                walk(nested[0], f"{var}__")
                var += "__..."
            assert var in rows, var
            assert not rows[var].rstrip().endswith("|  |"), f"{var} has no description"

    walk(Settings, ENV_PREFIX)


def test_cli_help_points_only_at_what_is_shipped() -> None:
    """No command's help sends the reader to DESIGN.md, which is not in the repository or the
    package (pipeline audit's did: the operators' review, #10)."""
    sys.path.insert(0, str(ROOT / "docs"))
    from gen_reference import cli_reference

    assert not (ROOT / "DESIGN.md").exists()
    page = cli_reference()
    assert "groupcoord pipeline audit" in page and "DESIGN.md" not in page


def test_a_default_decided_at_run_time_is_said_as_it_is() -> None:
    """log_format's model default is "json", but serve picks text when its stderr is a terminal
    unless it is set: the reference gave `'json'` beside a description saying otherwise."""
    sys.path.insert(0, str(ROOT / "docs"))
    from gen_reference import config_reference

    (row,) = [line for line in config_reference().splitlines() if line.startswith("| `log_format` |")]
    default = row.split(" | ")[2]
    assert default == "`text` when stderr is a terminal, else `json`", row


def test_boolean_defaults_read_as_toml_writes_them() -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    from gen_reference import config_reference

    page = config_reference()
    row = next(line for line in page.splitlines() if line.startswith("| `share_groups_enabled`"))
    assert "| `false` |" in row, row
    assert "`False`" not in page and "`True`" not in page
