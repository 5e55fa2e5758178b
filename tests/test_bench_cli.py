"""`python -m bench --help` prints usage and the benchmarks it knows, and runs none of them; an unknown name is a
usage error (exit 2) rather than a benchmark run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_help_prints_usage_and_runs_nothing() -> None:
    done = _bench("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench")
    assert "list_groups" in done.stdout
    assert "== bench" not in done.stdout


def test_an_unknown_benchmark_is_a_usage_error() -> None:
    done = _bench("no_such_bench")
    assert done.returncode == 2
    assert "unknown benchmark(s): no_such_bench" in done.stderr
    assert "== bench" not in done.stdout
