"""Every example block of the docs site (docs/*.md) runs as written, against a fresh `make run`.

Each page runs in a shell of its own, set up as the quickstart sets one up (`var/demo.env` sourced, `TOKEN` set),
its blocks in page order, so a block may use what an earlier block of its page made. What a block says it prints
(`# -> …`, `…` standing for anything) must be printed, and no other answer may be an error. Blocks marked for
another test (`<!-- quickstart: … -->`, `<!-- stubs: … -->`, a page's own marker) run there; `<!-- not run: … -->`
blocks only show a command. Data blocks (YAML, JSON) must parse as what they document.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from server.observability.inventory import parse_inventory
from tests.readme import DOCS, NOT_RUN, ROOT, Block, blocks, expectations
from tests.test_quickstart import _bash, _fresh_env, _serving

_RUN = ("sh", "python")
_DEFAULT_PORTS = {"8080": "SWITCHBOARD_PORT", "8081": "SWITCHBOARD_GATEWAY_PORT", "8082": "SWITCHBOARD_DEV_MODELS_PORT"}
_SEPARATOR = "\n>>> block "
# What an error answer looks like: a Connect error body, or an OpenAI error body.
_ERROR = re.compile(r'"code"\s*:\s*"[a-z_]+"|"error"\s*:\s*\{')


def _pages() -> dict[Path, list[Block]]:
    examples = {
        page: [block for block in blocks(page) if block.marker is None and block.lang in _RUN]
        for page in sorted(DOCS.glob("*.md"))
    }
    return {page: found for page, found in examples.items() if found}


def _pattern(expected: str, env: dict[str, str]) -> re.Pattern[str]:
    """`…` is anything on one line; the default ports are the ones this run serves on."""
    text = expected
    for port, variable in _DEFAULT_PORTS.items():
        text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{env[variable]}")
    return re.compile("[^\n]*?".join(re.escape(part) for part in text.split("…")))


def _check(block: Block, printed: str, env: dict[str, str]) -> list[str]:
    problems = []
    rest = printed
    for expected in expectations(block.code):
        found = _pattern(expected, env).search(rest)
        if found is None:
            problems.append(f"{block.where}: does not print {expected}\n--- it printed:\n{printed}")
        else:
            rest = rest[: found.start()] + rest[found.end() :]
    if _ERROR.search(rest):
        problems.append(f"{block.where}: an unexpected error answer\n--- it printed:\n{printed}")
    return problems


def test_every_runnable_block_is_either_run_or_says_why_not() -> None:
    for page in sorted(DOCS.glob("*.md")):
        for block in blocks(page):
            if block.lang in _RUN and block.marker is not None and block.marker.startswith(NOT_RUN):
                assert block.marked(NOT_RUN), f"{block.where}: say why the block is not run"


def test_data_blocks_parse_as_what_they_document() -> None:
    checked = 0
    for page in sorted(DOCS.glob("*.md")):
        for block in blocks(page):
            if block.lang == "json":
                json.loads(block.code)
            elif block.lang == "yaml":
                data = yaml.safe_load(block.code)
                if isinstance(data, dict) and "nodes" in data:  # the node inventory format
                    assert parse_inventory(block.code), block.where
            else:
                continue
            checked += 1
    assert checked, "no data block found: has the node inventory example moved?"


@pytest.mark.timeout(600)
def test_every_docs_example_runs_as_written(tmp_path: Path) -> None:
    pages = _pages()
    assert DOCS / "rag.md" in pages and DOCS / "gateway.md" in pages, sorted(pages)
    subprocess.run(["make", "-s", ".venv/.installed-stamp"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    for name in ("Makefile", "pyproject.toml", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = _fresh_env()
    # As `make run` has it on the default ports: ragUrl and `switchboard rag ingest` find the gateway.
    env["SWITCHBOARD_GATEWAY_PUBLIC_URL"] = f"http://127.0.0.1:{env['SWITCHBOARD_GATEWAY_PORT']}"
    problems: list[str] = []
    with _serving("make run", tmp_path, env, tmp_path / "make-run.log"):
        for page, examples in pages.items():
            workdir = tmp_path / page.stem  # a page's files (uploads, scripts) stay its own; var/ is shared
            workdir.mkdir()
            for name in ("var", ".venv"):
                (workdir / name).symlink_to(tmp_path / name)
            # stderr joins stdout, so what a block prints stays under its separator.
            script = ["set -euo pipefail", "exec 2>&1", ". var/demo.env", "export TOKEN=$(cat var/admin-token)"]
            for number, block in enumerate(examples):
                script.append(f"printf '\\n>>> block %s\\n' {number}")
                if block.lang == "python":
                    (workdir / f"example_{number}.py").write_text(block.code + "\n")
                    script.append(f".venv/bin/python example_{number}.py")
                else:
                    script.append(block.code)
            output = _bash(script, workdir, env)
            printed = output.split(_SEPARATOR)[1:]
            assert len(printed) == len(examples), output
            for block, text in zip(examples, printed, strict=True):
                problems.extend(_check(block, text.partition("\n")[2], env))
    assert problems == [], "\n\n".join(problems)


def test_the_site_quickstart_is_the_readme_quickstart() -> None:
    """docs/quickstart.md includes the README's section (pymdown snippets), which holds every quickstart block."""
    assert '--8<-- "README.md:quickstart"' in (DOCS / "quickstart.md").read_text()
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index("<!-- --8<-- [start:quickstart] -->"), readme.index("<!-- --8<-- [end:quickstart] -->")
    marked = [match.start() for match in re.finditer(r"<!-- quickstart: \w+ -->", readme)]
    assert marked and all(start < at < end for at in marked)
