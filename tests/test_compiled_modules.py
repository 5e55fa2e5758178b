"""The modules `make` compiles with mypyc (pyproject.toml, [tool.switchboard] compiled): what `make test` runs is
their build, and a build older than its source stops the run instead of being imported silently."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from setup import compiled_sources
from tests.conftest import stale_compiled_modules


@pytest.mark.skipif(os.environ.get("SWITCHBOARD_TEST_COMPILED") != "1", reason="run by `make test`, which compiles")
def test_make_test_runs_the_compiled_builds() -> None:
    for source in compiled_sources():
        module = importlib.import_module(source.removesuffix(".py").replace("/", "."))
        assert module.__file__ is not None and module.__file__.endswith(".so"), module.__file__


def test_a_build_older_than_its_source_is_stale(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.switchboard]\ncompiled = ["pkg/fast.py", "pkg/plain.py"]\n')
    (tmp_path / "pkg").mkdir()
    source, build = tmp_path / "pkg/fast.py", tmp_path / "pkg/fast.cpython-311-x86_64-linux-gnu.so"
    source.write_text("")
    (tmp_path / "pkg/plain.py").write_text("")  # never built: interpreted, so nothing can be stale
    build.write_bytes(b"")
    os.utime(source, (1_000, 1_000))
    os.utime(build, (2_000, 2_000))
    assert stale_compiled_modules(tmp_path) == []
    os.utime(source, (3_000, 3_000))  # edited after the build
    assert stale_compiled_modules(tmp_path) == ["pkg/fast.py"]
