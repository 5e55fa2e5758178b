"""Tasks for tests/test_sandbox.py: module-level, so that a worker process can import them by name."""

from __future__ import annotations

import os
import resource
import signal
from pathlib import Path

from server.errors import InvalidArgument


def pid() -> int:
    return os.getpid()


PIDS = "SWITCHBOARD_TEST_WORKER_PIDS"


def record_pid() -> None:
    """A worker's warm-up: a file named by its pid in the folder the environment names, when it names one."""
    folder = os.environ.get(PIDS)
    if folder:
        (Path(folder) / str(os.getpid())).write_text("")


def refuse(field: str) -> None:
    raise InvalidArgument("refused in the worker", field=field)


def burn(cpu_seconds: float) -> int:
    """Spin until this process has used `cpu_seconds` more CPU time; the worker's pid."""
    start = _cpu()
    while _cpu() - start < cpu_seconds:
        pass
    return os.getpid()


def burn_unlimited(path: str) -> None:
    """Spin with the worker's RLIMIT_CPU lifted, as on a machine whose kernel does not enforce it (seen on a loaded
    VM): only the sandbox's own watch of the worker's CPU time can stop it. Writes the CPU seconds it has used to
    `path` as it goes."""
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    start = reported = _cpu()
    while True:
        if _cpu() - reported >= 0.05:
            reported = _cpu()
            Path(path).write_text(str(reported - start))


def announce_then_spin(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    while True:
        pass


def crash() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


class TwoPartError(Exception):
    """A common library pattern: __init__ takes more than the message it passes on, so pickle, which rebuilds an
    exception from its args, cannot."""

    def __init__(self, part: str, reason: str) -> None:
        super().__init__(f"{part}: {reason}")
        self.part, self.reason = part, reason


def raise_two_part_error() -> None:
    raise TwoPartError("word/document.xml", "unreadable")


def allocate(nbytes: int) -> int:
    return len(bytearray(nbytes))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
