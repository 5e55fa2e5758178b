"""The README's commands, read from README.md itself so a test runs exactly what a new user would copy."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["README", "fenced_blocks", "quickstart_blocks", "stubs_blocks"]

README = Path(__file__).resolve().parent.parent / "README.md"
_MARKED = re.compile(r"<!-- quickstart: (\w+) -->\n```(\w+)\n(.*?)\n```", re.S)
_STUBS = re.compile(r"<!-- stubs: (\w+) -->\n```(\w+)\n(.*?)\n```", re.S)
_FENCED = re.compile(r"```(\w*)\n(.*?)\n```", re.S)


def quickstart_blocks() -> list[tuple[str, str]]:
    """(role, code) of every block marked `<!-- quickstart: serve|shell|python -->`, in README order."""
    return [(role, code) for role, _lang, code in _MARKED.findall(README.read_text())]


def stubs_blocks() -> dict[str, str]:
    """The section on generating stubs in another project: its `shell` and `python` blocks."""
    return {role: code for role, _lang, code in _STUBS.findall(README.read_text())}


def fenced_blocks(lang: str) -> list[str]:
    return [code for found, code in _FENCED.findall(README.read_text()) if found == lang]
