"""The meter's local journal: what a process has metered but not yet written to the database survives its kill -9.

Each metering process (a gateway worker, the management server) appends every usage event and every counted request
as one line to a segment file of its own under the journal directory (`SWITCHBOARD_METERING_JOURNAL_DIR`, default
var/metering-journal). The segment is mapped into memory (a shared file mapping of blocks allocated up front), so
appending a line is a copy into the kernel's page cache, without a system call: once copied, the line belongs to the
file, and a process killed any way after it loses nothing. (One `write()` per line cost 13-22 us here, where system
calls are slow, two per gateway request; the copy costs well under a microsecond. Where the blocks cannot be
allocated, a segment falls back to one `write()` per line.) When the meter's flusher takes a batch it starts a new
segment at the same moment, so a segment holds exactly one batch; it makes the segment durable (`msync`, off the
event loop) before writing the batch to the database, and deletes it once that committed. A segment's lines end at
its first NUL byte (the rest is allocated, unwritten space; JSON lines never hold a NUL).

The new segment is a spare the flusher prepared earlier off the event loop (`Journal.prepare`, on a thread):
creating, allocating and mapping a file took milliseconds of the loop twice a second when done at the switch. A
spare holds no line until it is switched to, so one left by a dead process replays as nothing (and is deleted).

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
import mmap
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["RESCAN_SECONDS", "Journal", "Segment"]

log = logging.getLogger("switchboard.metering")

RESCAN_SECONDS = 30.0
_SUFFIX = ".journal"
_CAPACITY = 1 << 20  # a new segment's allocated size; doubled when a batch outgrows it


class Segment:
    """One batch's lines in one file, open and locked by its writer (or by the process replaying it). A writer's
    segment is mapped (`_map`, lines copied in up to `_end`) unless its blocks could not be allocated."""

    def __init__(self, path: Path, fd: int, mapped: mmap.mmap | None = None) -> None:
        self.path = path
        self.fd = fd
        self._map = mapped
        self._end = 0

    def append(self, line: bytes) -> None:
        if self._map is None:
            os.write(self.fd, line)
            return
        end = self._end + len(line)
        if end > len(self._map):
            size = max(end, 2 * len(self._map))
            os.posix_fallocate(self.fd, 0, size)  # allocated before it is mapped: a full disk is an error, no SIGBUS
            self._map.resize(size)
        self._map[self._end : end] = line
        self._end = end

    @property
    def batch_id(self) -> str:
        """Unique to this batch of this process ever: the traffic rows of the batch are keyed by it."""
        return self.path.name.removesuffix(_SUFFIX)

    def sync(self) -> None:
        if self._map is not None:
            self._map.flush()
        else:
            os.fdatasync(self.fd)

    def lines(self) -> Iterator[bytes]:
        """The segment's complete lines (a torn last line, from a crash mid-write, is left out)."""
        data = os.pread(self.fd, os.fstat(self.fd).st_size, 0)
        data = data[: data.find(b"\0")] if b"\0" in data else data
        size = len(data)
        end = data.rfind(b"\n")
        if end >= 0:
            yield from data[:end].split(b"\n")
        if end + 1 < len(data):
            log.warning("metering journal %s ends in a torn line (%d bytes): left out", self.path.name, size - end - 1)

    @property
    def empty(self) -> bool:
        return (self._end if self._map is not None else os.fstat(self.fd).st_size) == 0

    def discard(self) -> None:
        """Its batch is in the database: delete it, then let go of it."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.release()

    def release(self) -> None:
        """Its batch is not in the database: keep the file for a later replay and let go of it."""
        if self._map is not None:
            self._map.close()
            self._map = None
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
        self._current: Segment | None = self._open()  # None: a new segment could not be opened, journal off
        self._spare: Segment | None = None  # the next one, opened ahead by prepare()

    def _open(self) -> Segment:
        self._count += 1
        path = self.directory / f"{self._prefix}-{self._count}{_SUFFIX}"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else holds it
        self._ours.add(path)
        try:
            os.posix_fallocate(fd, 0, _CAPACITY)
            mapped = mmap.mmap(fd, _CAPACITY, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as exc:  # no room to allocate (or no mapping): one write() per line
            log.warning("metering journal %s not mapped (%s): written line by line", path.name, exc.strerror)
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_END)
            return Segment(path, fd)
        return Segment(path, fd, mapped)

    def append(self, line: bytes) -> None:
        """One line (ending in a newline). A journal that cannot be written (a full disk) costs requests nothing:
        their rows still go to the database with the batch, only unprotected."""
        if self._current is None:
            return
        try:
            self._current.append(line)
        except OSError as exc:
            if not self._failing:
                log.error("the metering journal cannot be written (%s): rows are not protected", exc.strerror)
                self._failing = True
            return
        self._failing = False

    def prepare(self) -> None:
        """Open the segment the next `rotate` switches to, unless one is ready. It blocks (file creation, allocation,
        mapping): call it off the event loop, from the task that rotates, never while a rotation runs. A failure is
        left to that rotation, which tries again and reports it."""
        if self._spare is None:
            with contextlib.suppress(OSError):
                self._spare = self._open()

    def rotate(self) -> Segment | None:
        """The segment written so far (still held, for its batch's write; None when the journal is off), and a new
        one for what follows: the prepared spare, else one opened here. When no new one can be opened (no file
        descriptors, a read-only volume) the journal goes off: later batches are written unprotected, never mixed
        into the returned segment."""
        segment = self._current
        if self._spare is not None:
            self._current, self._spare = self._spare, None
            return segment
        try:
            self._current = self._open()
        except OSError as exc:
            log.error("the metering journal cannot open a new segment (%s): rows are not protected", exc.strerror)
            self._current = None
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
        """At a graceful stop, after the last batch: delete the current segment and the spare when empty; one that
        holds lines (a row recorded after the last batch was taken) is kept for the next process to replay."""
        for segment in (self._current, self._spare):
            if segment is not None:
                if segment.empty:
                    segment.discard()
                else:
                    segment.sync()
                    segment.release()
                self.forget(segment)
        self._current = self._spare = None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
