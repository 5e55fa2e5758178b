"""docs/walkthrough.md, run as written from a fresh directory like the README's quickstart: `make run`, then each
block in a second shell. The seeded demo must show the MCP tool loop, file_search over the demo RAG, a guardrail
refusal and the preset agent, each answered by the real gateway, MCP server, RAG and stand-in models; a later start
on the same database finds the demo again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from server.dev.models import STAND_IN_NOTICE
from tests.readme import blocks
from tests.test_quickstart import ROOT, _bash, _fresh_env, _serving

WALKTHROUGH = ROOT / "docs" / "walkthrough.md"
REFUSAL = "withheld by the output guardrail 'dev/stand-in-guardrail': the demo guardrail refuses anything"


def walkthrough_blocks() -> list[tuple[str, str]]:
    """(role, code) of every block of docs/walkthrough.md marked `<!-- quickstart: serve|shell|python -->`."""
    return [(role, block.code) for block in blocks(WALKTHROUGH) if (role := block.marked("quickstart"))]


@pytest.mark.timeout(600)
def test_the_walkthrough_shows_every_headline_feature(tmp_path: Path) -> None:
    blocks = walkthrough_blocks()
    roles = [role for role, _ in blocks]
    assert roles[0] == "serve" and roles.count("python") >= 3 and "shell" in roles, roles
    subprocess.run(["make", "-s", ".venv/.installed-stamp"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    for name in ("Makefile", "pyproject.toml", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = _fresh_env()
    with _serving(blocks[0][1], tmp_path, env, tmp_path / "make-run.log") as printed:
        for name in ("MCP_SERVER=demo-tools", "RAG=rag_", "AGENT=demo/assistant", "GUARDRAIL_MODEL="):
            assert name in printed, printed
        script = ["set -euo pipefail"]
        for number, (role, code) in enumerate(blocks[1:]):
            if role == "python":
                (tmp_path / f"walkthrough_{number}.py").write_text(code + "\n")
                script.append(f"echo '--- block {number}'; .venv/bin/python walkthrough_{number}.py")
            else:
                script.append(f"echo '--- block {number}'\n{code}")
        output = _bash(script, tmp_path, env)
    first = _demo_env(tmp_path)
    _check(output)
    # A later `make run` on the same database without var/demo.env (lost, or written by an older version with fewer
    # variables) finds the demo's tenant, RAG, MCP server and agent again, and gives them a new key.
    (tmp_path / "var" / "demo.env").unlink()
    with _serving(blocks[0][1], tmp_path, env, tmp_path / "make-run-again.log"):
        again = _demo_env(tmp_path)
        assert again["OPENAI_API_KEY"] != first["OPENAI_API_KEY"]
        assert {k: v for k, v in again.items() if k != "OPENAI_API_KEY"} == {
            k: v for k, v in first.items() if k != "OPENAI_API_KEY"
        }
        agent = len(blocks) - 2
        output = _bash([f". var/demo.env && .venv/bin/python walkthrough_{agent}.py"], tmp_path, env)
        assert "demo-toolsadd answered: 42." in output and "office-hours.md" in output and REFUSAL in output, output


def _demo_env(directory: Path) -> dict[str, str]:
    lines = (directory / "var" / "demo.env").read_text().splitlines()
    return dict(line.removeprefix("export ").split("=", 1) for line in lines)


def _check(output: str) -> None:
    sections = dict(part.split("\n", 1) for part in output.split("--- block ")[1:])
    rag, tools, search, refusal, agent = sections.values()
    assert '"filename":"api-keys.md"' in rag and '"code"' not in rag, rag
    # The MCP tool loop: the stand-in called the demo server's tool and answered from its result.
    assert 'mcp_call get_weather {"city":"Paris"} -> Paris: 18 °C, light rain (demo data)' in tools, tools
    assert f"{STAND_IN_NOTICE} demo-toolsget_weather answered: Paris: 18 °C, light rain (demo data)." in tools
    # file_search over the demo RAG, with the handbook's page on keys first.
    assert "file_search_call ['Search the handbook: how do I rotate an API key?'] -> api-keys.md" in search, search
    assert "answered: the best match is api-keys.md: # Rotating an API key" in search, search
    # The guardrail withholds the agent's answer.
    assert '"finish_reason":"content_filter"' in refusal and REFUSAL in refusal, refusal
    # The agent with its default tools, and its guardrail.
    lines = agent.splitlines()
    assert lines[0].startswith("Add 2 and 40 ['mcp_list_tools', 'mcp_call', 'message'] -> "), agent
    assert lines[0].endswith("demo-toolsadd answered: 42."), agent
    assert "['mcp_list_tools', 'file_search_call', 'message']" in lines[1] and "office-hours.md" in lines[1], agent
    assert lines[2].startswith("What is the admin password? ['message'] -> The response was") and REFUSAL in lines[2]
