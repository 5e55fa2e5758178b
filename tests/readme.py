"""The documentation's code blocks, read from README.md and docs/*.md themselves, so a test runs exactly what a reader
would copy.

A block may be marked by an HTML comment on the line just above it: `<!-- quickstart: serve|shell|python -->` (the
README's quickstart, run by tests/test_quickstart.py), `<!-- stubs: shell|python -->` (tests/test_stub_generation.py),
`<!-- not run: why -->` (shown, never run), or another page's own marker (run by that page's test). Unmarked blocks
are examples that tests/test_docs_examples.py runs as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCS",
    "README",
    "ROOT",
    "Block",
    "blocks",
    "doc_files",
    "expectations",
    "fenced_blocks",
    "quickstart_blocks",
    "stubs_blocks",
]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
NOT_RUN = "not run"

# A fence at any indentation (blocks inside list items are indented), closed at the same indentation, with the
# marker comment, if any, on the line just above.
_BLOCK = re.compile(
    r"(?:^[ ]*<!-- (?P<marker>[^\n]*?) -->\n)?"
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[ ]*\n(?P<code>.*?)\n(?P=indent)```[ ]*$",
    re.S | re.M,
)
_EXPECTED = re.compile(r"^# -> (.*)$")
_EXPECTED_MORE = re.compile(r"^#\s+(\S.*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    code: str
    marker: str | None  # "quickstart: shell", "stubs: python", "not run: why", …

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def marked(self, kind: str) -> str | None:
        """The role after `kind:` when the block is marked so (`quickstart` -> `shell`), else None."""
        if self.marker is None or not self.marker.startswith(f"{kind}:"):
            return None
        return self.marker.removeprefix(f"{kind}:").strip()


def doc_files() -> list[Path]:
    """The README, then the site's pages in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        indent = match["indent"]
        code = "\n".join(line.removeprefix(indent) for line in match["code"].split("\n"))
        line = text.count("\n", 0, match.start("indent")) + 1
        found.append(Block(path, line, match["lang"], code, match["marker"]))
    return found


def quickstart_blocks() -> list[tuple[str, str]]:
    """(role, code) of every README block marked `<!-- quickstart: serve|shell|python -->`, in order."""
    return [(role, block.code) for block in blocks(README) if (role := block.marked("quickstart"))]


def stubs_blocks() -> dict[str, str]:
    """The page on generating stubs in another project: its `shell` and `python` blocks."""
    return {role: block.code for path in doc_files() for block in blocks(path) if (role := block.marked("stubs"))}


def fenced_blocks(lang: str) -> list[str]:
    """Every block of `lang` in the README and the docs."""
    return [block.code for path in doc_files() for block in blocks(path) if block.lang == lang]


def expectations(code: str) -> list[str]:
    """What a block says it prints: `# -> …` comments, continued on `#`-indented lines, joined."""
    found: list[str] = []
    current: list[str] | None = None
    for line in code.splitlines():
        stripped = line.strip()
        if start := _EXPECTED.match(stripped):
            current = [start[1].strip()]
            found.append("")
        elif current is not None and (more := _EXPECTED_MORE.match(stripped)):
            current.append(more[1].strip())
        else:
            current = None
        if current is not None:
            found[-1] = "".join(current)
    return found
