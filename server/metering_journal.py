"""The meter's local journal: what a process has metered but not yet written to the database survives its kill -9.

Each metering process (a gateway worker, the management server) appends every usage event and every counted request
as one line to a segment file of its own under the journal directory (`SWITCHBOARD_METERING_JOURNAL_DIR`, default
var/metering-journal), with one `write()` each: once that returns, the line is in the kernel, and a process killed
any way after it loses nothing. When the meter's flusher takes a batch it starts a new segment at the same moment, so
a segment holds exactly one batch; it makes the segment durable (`fdatasync`, off the event loop) before writing the
batch to the database, and deletes it once that committed.

A segment is locked (`flock`) by its process for as long as it is open, and the lock goes with the process however
it ends. Any meter on the same directory replays segments nobody holds (at its start, then every
`RESCAN_SECONDS`): a segment whose writer died, or whose batch the database refused beyond the retries. Replaying
is idempotent: usage rows are inserted by their call id and traffic rows by their batch key, ON CONFLICT DO NOTHING
(server.metering), so a batch that committed just before its writer died is not written twice.

What it does not cover: lines written since the last batch tick (at most `server.metering`'s linger, 0.5 s) are
only in the kernel's page cache until then, so a node crash (not a process crash) can lose them; and a journal on a
volume that goes away with its pod (a Kubernetes emptyDir) is only replayed if the replica restarts in that pod
(docs/operations.md). Lines hold ids, names of services, counts, sizes and times: never model content.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["RESCAN_SECONDS", "Journal", "Segment"]

log = logging.getLogger("switchboard.metering")

RESCAN_SECONDS = 30.0
_SUFFIX = ".journal"


class Segment:
    """One batch's lines in one file, open and locked by its writer (or by the process replaying it)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    @property
    def batch_id(self) -> str:
        """Unique to this batch of this process ever: the traffic rows of the batch are keyed by it."""
        return self.path.name.removesuffix(_SUFFIX)

    def sync(self) -> None:
        os.fdatasync(self.fd)

    def lines(self) -> Iterator[bytes]:
        """The segment's complete lines (a torn last line, from a crash mid-write, is left out)."""
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, size, 0)
        end = data.rfind(b"\n")
        if end >= 0:
            yield from data[:end].split(b"\n")
        if end + 1 < len(data):
            log.warning("metering journal %s ends in a torn line (%d bytes): left out", self.path.name, size - end - 1)

    def discard(self) -> None:
        """Its batch is in the database: delete it, then let go of it."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self.fd)

    def release(self) -> None:
        """Its batch is not in the database: keep the file for a later replay and let go of it."""
        os.close(self.fd)


def _claim(path: Path) -> Segment | None:
    """The segment, locked by us, or None when its writer still holds it (or it is gone)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if not path.exists():  # replayed and deleted by another process between our open and our lock
        os.close(fd)
        return None
    return Segment(path, fd)


class Journal:
    """This process's segments in `directory` (created 0700; segment files 0600)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory = directory
        self._prefix = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._count = 0
        self._ours: set[Path] = set()  # segments this process wrote and still holds
        self._failing = False  # a write failed: said once until one succeeds again
        self._current = self._open()

    def _open(self) -> Segment:
        self._count += 1
        path = self.directory / f"{self._prefix}-{self._count}{_SUFFIX}"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else holds it
        self._ours.add(path)
        return Segment(path, fd)

    def append(self, line: bytes) -> None:
        """One line (ending in a newline) in one write(). A journal that cannot be written (a full disk) costs
        requests nothing: their rows still go to the database with the batch, only unprotected."""
        try:
            os.write(self._current.fd, line)
        except OSError as exc:
            if not self._failing:
                log.error("the metering journal cannot be written (%s): rows are not protected", exc.strerror)
                self._failing = True
            return
        self._failing = False

    def rotate(self) -> Segment:
        """The segment written so far (still held, for its batch's write), and a new one for what follows."""
        segment, self._current = self._current, self._open()
        return segment

    def forget(self, segment: Segment) -> None:
        self._ours.discard(segment.path)

    def leftovers(self) -> list[Segment]:
        """Segments of this directory nobody holds, claimed by this process, oldest first."""
        found = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}"), key=_mtime):
            if path in self._ours:
                continue
            segment = _claim(path)
            if segment is not None:
                found.append(segment)
        return found

    def close(self) -> None:
        """At a graceful stop, after the last batch: the current segment is empty, delete it."""
        self._current.discard()
        self.forget(self._current)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
