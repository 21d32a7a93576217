"""Java ``.properties`` text as Kafka's tools read a ``--command-config`` file, for the CLI and the
pipeline alike (each had a reader of its own, and only one took ``key: value``).

What an operator's existing file may hold: ``#``/``!`` comments, ``key=value`` or ``key: value``
(the first separator not escaped by a backslash), a line ending in an odd number of backslashes
continued on the next (whose leading blanks are dropped), and Java's escapes in keys and values
(``\\=``, ``\\:``, ``\\\\``, ``\\t``, ``\\n``, ``\\uXXXX``; any other escaped character is itself). A
line without a separator is refused rather than read as a key with an empty value, as Java would:
in a file of client settings that is a typo. Blanks around the key and the value are dropped.
"""

from __future__ import annotations

import re

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_UNICODE = re.compile(r"[0-9a-fA-F]{4}")


class PropertiesError(ValueError):
    """A line that is no ``key=value``: its number (1-based, where the logical line began)."""

    def __init__(self, line: int, text: str) -> None:
        super().__init__(f"{line}: expected key=value, got {text!r}")
        self.line = line
        self.text = text


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        key, value = _split(line, number)
        props[_unescape(key)] = _unescape(value)
    return props


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str, number: int) -> tuple[str, str]:
    j = 0
    while j < len(line):
        if line[j] == "\\":
            j += 2
            continue
        if line[j] in "=:":
            key = line[:j].strip()
            if key:
                return key, line[j + 1 :].strip()
            break
        j += 1
    raise PropertiesError(number, line.strip())


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    j = 0
    while j < len(text):
        c = text[j]
        if c != "\\" or j + 1 == len(text):
            out.append(c)
            j += 1
            continue
        escaped = text[j + 1]
        if escaped == "u" and _UNICODE.fullmatch(text[j + 2 : j + 6]):
            out.append(chr(int(text[j + 2 : j + 6], 16)))
            j += 6
        else:
            out.append(_ESCAPES.get(escaped, escaped))
            j += 2
    return "".join(out)
