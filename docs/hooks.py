"""mkdocs hook: fills the generated reference pages at build time (mkdocs.yml `hooks:`), so the CLI
and configuration references are always the code's own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from gen_reference import cli_reference, config_reference  # noqa: E402

MARKERS = {"<!-- cli-reference -->": cli_reference, "<!-- config-reference -->": config_reference}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, render in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
