"""Every SWITCHBOARD_* value is read by one parser per type that names the variable when it refuses, numeric
settings are refused outside the range where they mean something, and a refused setting stops every process at
start with a one-line message instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from server.settings import load_settings

SWITCHBOARD = str(Path(sys.executable).with_name("switchboard"))


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, check=False, timeout=60
    )


def test_a_malformed_number_in_a_setting_is_refused_by_name() -> None:
    """Not Python's bare "could not convert string to float: 'soon'", which names none of dozens of variables."""
    with pytest.raises(ValueError, match="SWITCHBOARD_API_KEY_CACHE_SECONDS"):
        load_settings({"SWITCHBOARD_API_KEY_CACHE_SECONDS": "soon"})


def test_a_nan_key_cache_bound_is_refused() -> None:
    """The bound on how long a revoked key keeps working: a NaN expiry compares false with every time, so every
    cached key lookup would live forever."""
    with pytest.raises(ValueError, match="SWITCHBOARD_API_KEY_CACHE_SECONDS"):
        load_settings({"SWITCHBOARD_API_KEY_CACHE_SECONDS": "nan"})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GATEWAY_WORKERS", "-1"),
        ("PORT", "65536"),
        ("GATEWAY_PORT", "-1"),
        ("DEV_MODELS_PORT", "0"),
        ("DB_POOL_SIZE", "1.5"),
        ("RESTART_LIMIT", "-1"),
        ("RESTART_WINDOW_SECONDS", "0"),
        ("GATEWAY_UPSTREAM_STALL_SECONDS", "inf"),
        ("MCP_NETWORK_POLICY_CACHE_SECONDS", "-1"),
        ("MCP_SESSION_IDLE_SECONDS", "0"),
        ("MCP_SESSION_POOL_SIZE", "0"),
        ("RESPONSES_MAX_TOOL_ITERATIONS", "0"),
        ("RESPONSES_DEFAULT_RAG_TOOLS", "-1"),
        ("MCP_MAX_TOOL_RESULT_BYTES", "-1"),
        ("RAG_MAX_FILE_BYTES", "big"),
        ("AUDIT_RETENTION_DAYS", "NaN"),
    ],
)
def test_a_value_outside_its_range_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"^SWITCHBOARD_{name}: must be "):
        load_settings({f"SWITCHBOARD_{name}": value})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GATEWAY_WORKERS", "0"),  # one per core
        ("GATEWAY_PORT", "0"),  # a free port
        ("PORT", "65535"),
        ("API_KEY_CACHE_SECONDS", "0"),  # no caching
        ("SHUTDOWN_DEREGISTER_SECONDS", "0"),
        ("RESPONSES_DEFAULT_RAG_TOOLS", "0"),
        ("RAG_INLINE_BYTES", "0"),
        ("RESTART_LIMIT", "0"),
        ("LIMITS_PERMIT_IDLE_SECONDS", "0.05"),
    ],
)
def test_the_edges_of_each_range_are_accepted(name: str, value: str) -> None:
    assert str(getattr(load_settings({f"SWITCHBOARD_{name}": value}), name.lower())).removesuffix(".0") == value


def test_a_negative_gateway_worker_count_is_refused(tmp_path: Path) -> None:
    """-1 workers started none and exited 0 at once: a replica that serves nothing and reports success."""
    done = _run(
        [sys.executable, "-m", "gateway"],
        tmp_path,
        SWITCHBOARD_VAR_DIR=str(tmp_path / "var"),
        SWITCHBOARD_GATEWAY_PORT="0",
        SWITCHBOARD_GATEWAY_WORKERS="-1",
    )
    assert done.returncode == 2, done.stdout
    assert (
        done.stderr == "switchboard gateway: SWITCHBOARD_GATEWAY_WORKERS: must be a whole number, 0 or more, not -1\n"
    )


@pytest.mark.parametrize(
    "command",
    [["migrate"], ["serve"], ["token", "--user", "alice"], ["dev-models"], ["rag", "ingest", ".", "--rag", "r"]],
    ids=lambda command: command[0],
)
def test_the_cli_reports_a_bad_setting_as_a_message_not_a_traceback(tmp_path: Path, command: list[str]) -> None:
    """Every `switchboard` command: one line naming the variable and exit 2, the refusal not buried under a stack."""
    done = _run([SWITCHBOARD, *command], tmp_path, SWITCHBOARD_OTEL_EXPORTER="jaeger")
    assert done.returncode == 2
    assert done.stderr == "switchboard: SWITCHBOARD_OTEL_EXPORTER: must be none, console or otlp\n"
    assert list(tmp_path.iterdir()) == []  # nothing started or written
