"""Machine instructions per gateway request, two keys compared in one worker (callgrind).

CPU time on a shared machine moves by +-10-30 % between rounds; instruction counts move by a few percent (the
meter's batches, which under valgrind's slowdown hold tens of calls rather than a thousand, so its per-batch work
weighs more than in a c=32 round). The worker is served as `bench.gateway._process` serves it, under callgrind,
counting only while a case's requests are served and its meter writes them (its threads included: the meter's
sealing, SQLite). The counts leave out what the kernel does for the process (socket and file writes) and what caches
miss. Skipped without valgrind, or with SWITCHBOARD_BENCH_CALLGRIND=0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from asyncio.subprocess import DEVNULL
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from bench.gateway import Served, _calls, _free_port, _ready

__all__ = ["REQUESTS", "instructions"]

REQUESTS = 600
REPEATS = 2  # each case's two keys counted twice, alternating; the lower of each is printed
SETTLE_SECONDS = 4.0  # the meter's linger and write, slowed down by valgrind
IN_FLIGHT = 8


@contextlib.asynccontextmanager
async def _callgrind_gateway(env: dict[str, str], out: Path) -> AsyncIterator[Served]:
    """A gateway worker under callgrind, counting nothing until told to (callgrind_control); each dump goes to a
    file of its own beside `out`."""
    port = _free_port()
    code = f"import json, sys; from bench.gateway import _run; _run('gateway', json.loads(sys.argv[1]), {port})"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    # A fixed string hash seed: dicts' and sets' layouts follow it, and with a random one counts of the same code
    # moved by up to a point from run to run (docs/limits.md, "Re-counted"); fixed, runs of the same code agree.
    proc = await asyncio.create_subprocess_exec(
        *command,
        sys.executable,
        "-c",
        code,
        json.dumps(env),
        stdout=DEVNULL,
        stderr=DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    try:
        yield Served(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 120)


async def _callgrind(*args: str) -> None:
    proc = await asyncio.create_subprocess_exec("callgrind_control", *args, stdout=DEVNULL, stderr=DEVNULL)
    assert await proc.wait() == 0, args


async def _counted(served: Served, out: Path, call: Any, requests: int) -> float:
    """Instructions per request of `requests` calls, `IN_FLIGHT` at a time, and their meter's writing."""
    await asyncio.sleep(SETTLE_SECONDS)  # the warm-up's rows written, uncounted
    dumps = set(out.parent.glob(f"{out.name}.*"))

    async def sender() -> None:
        for _ in range(requests // IN_FLIGHT):
            await call()

    await _callgrind("-i", "on", str(served.pid))
    # Each sender sends its next request as soon as its last is answered, as wrk's connections do: waiting for the
    # slowest of a round of IN_FLIGHT would leave the worker idle between rounds, which under valgrind's slowdown
    # is long enough for time-based work (the limiter gives permits idle 0.2 s back to Redis) to run every round.
    await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
    await asyncio.sleep(SETTLE_SECONDS)
    await _callgrind("-d", str(served.pid))  # writes the counts so far and starts again from zero
    await _callgrind("-i", "off", str(served.pid))
    (dump,) = set(out.parent.glob(f"{out.name}.*")) - dumps
    totals = re.search(r"^totals:\s+(\d+)", dump.read_text(), re.MULTILINE)
    assert totals is not None, dump
    return int(totals[1]) / requests


async def instructions(
    env: dict[str, str],
    keys: dict[str, str],
    *,
    streaming: bool = True,
    requests: int = REQUESTS,
    repeats: int = REPEATS,
) -> dict[str, tuple[float, float]] | None:
    """Prints, and returns by case (non-streaming, streaming), the instructions per request of the two `keys`
    (label -> secret, the baseline first) and their ratio, the lower of `repeats` counts of `requests` calls each;
    None when skipped."""
    if os.environ.get("SWITCHBOARD_BENCH_CALLGRIND") == "0" or not shutil.which("valgrind"):
        print("-- instructions per request: skipped (valgrind not installed, or SWITCHBOARD_BENCH_CALLGRIND=0)")
        return None
    (base, base_key), (other, other_key) = keys.items()
    print(f"-- instructions per request (callgrind), {requests} requests, {IN_FLIGHT} in flight, lower of {repeats}")
    print(f"{'case':<14} {base:>10} {other:>10} {'ratio':>7}")
    out = Path(tempfile.mkdtemp(prefix="switchboard-callgrind-")) / "gateway.out"
    found: dict[str, tuple[float, float]] = {}
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
            _callgrind_gateway(env, out) as gateway,
        ):
            url = f"{gateway.url}/v1/chat/completions"
            for _ in range(10):  # its start, slowed down by valgrind
                with contextlib.suppress(RuntimeError):
                    await _ready(http, url, {"Authorization": f"Bearer {base_key}"})
                    break
            await _ready(http, url, {"Authorization": f"Bearer {other_key}"})
            for streamed in (False, True) if streaming else (False,):
                counts: dict[str, list[float]] = {base: [], other: []}
                for _ in range(repeats):
                    for label, key in keys.items():
                        non_stream, stream = _calls(http, url, {"Authorization": f"Bearer {key}"})
                        call = stream if streamed else non_stream
                        for _ in range(50):
                            await call()
                        counts[label].append(await _counted(gateway, out, call, requests))
                low_base, low_other = min(counts[base]), min(counts[other])
                case = "streaming" if streamed else "non-streaming"
                found[case] = (low_base, low_other)
                spread = " ".join(
                    f"{label}: {', '.join(f'{c / 1000:.0f}k' for c in got)}" for label, got in counts.items()
                )
                print(
                    f"{case:<14} {low_base / 1000:>9.0f}k {low_other / 1000:>9.0f}k {low_other / low_base:>6.3f}x"
                    f"  (each count, in order: {spread})"
                )
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    return found
