"""Private files under the var dir (signing key, encryption key, admin token), written so no reader sees half a file.

Every file is written whole to a temporary file beside it (0600) and only then given its name: `create_once` links
it into place (the first process wins; the others read the winner's), `replace` renames it over the old one. A plain
O_EXCL create followed by a write lets a sibling process (several gateway workers on a first start) open the file in
between and read it empty.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["create_once", "replace"]


def _written_temp(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def create_once(path: Path, make: Callable[[], bytes]) -> bytes:
    """The file's content, creating it with `make()` when it does not exist yet (race-free across processes)."""
    if path.exists():
        return path.read_bytes()
    temp = _written_temp(path, make())
    try:
        os.link(temp, path)  # fails if another process linked its file first; theirs is complete
    except FileExistsError:
        pass
    finally:
        os.unlink(temp)
    return path.read_bytes()


def replace(path: Path, data: bytes) -> None:
    """Write the file anew (0600); readers see the old content or the new, never a part."""
    os.replace(_written_temp(path, data), path)
