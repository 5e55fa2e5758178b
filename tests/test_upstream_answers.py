"""Answers read whole (gateway.providers.read_answer) are bounded in what they cost a worker: their bytes and what
parsing them allocates, per surface. Real loopback upstreams; the parse-cost estimate is checked against what orjson
really allocates (tracemalloc), and a hostile answer's peak RSS is measured in a process of its own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tracemalloc

import orjson
import pytest

from gateway.providers import Surface, read_answer
from gateway.providers.base import answer_bound, parse_cost
from server.errors import UpstreamFailed
from tests.test_upstream_http import Server, client, keep_alive, read_request, serving

_MiB = 1024 * 1024


def answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def repeated(unit: bytes, size: int) -> bytes:
    """A JSON array of `unit`, about `size` bytes."""
    return b"[" + b",".join([unit] * (size // (len(unit) + 1))) + b"]"


HOSTILE = {
    "dicts": b'{"a":0}',
    "empty-dicts": b"{}",
    "empty-lists": b"[]",
    "one-float-lists": b"[0.5]",
    "floats": b"0.5",
    "short-strings": b'"ab"',
    "dicts-of-strings": b'{"a":"b"}',
    "wide-dicts": b'{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0}',
}


def embeddings(inputs: int, dims: int, *, pretty: bool) -> bytes:
    """An embeddings answer as providers write it: full-precision floats, compact or one number a line (OpenAI's
    layout)."""
    vector = [-0.006929283495992422 + i * 1e-9 for i in range(dims)]
    data = [{"object": "embedding", "index": i, "embedding": vector} for i in range(inputs)]
    body = {"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    return json.dumps(body, indent=2 if pretty else None, separators=None if pretty else (",", ":")).encode()


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_the_parse_cost_bounds_what_orjson_allocates(shape: str) -> None:
    raw = repeated(HOSTILE[shape], _MiB // 2)
    tracemalloc.start()
    try:
        parsed = orjson.loads(raw)
        allocated, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del parsed
    assert allocated > 4 * len(raw)  # the shapes do amplify...
    assert allocated <= parse_cost(raw) <= 6 * allocated  # ...and the estimate bounds it, not far above


@pytest.mark.parametrize("dims", [3072, 4096])
@pytest.mark.parametrize("pretty", [False, True], ids=["compact", "pretty"])
def test_the_largest_real_embeddings_answer_fits_its_bound(pretty: bool, dims: int) -> None:
    """2048 inputs as JSON floats, from 1/32 of them (size and cost add up over inputs)."""
    part = embeddings(64, dims, pretty=pretty)
    bound = answer_bound(Surface.EMBEDDINGS)
    assert 32 * len(part) < bound.size and 32 * parse_cost(part) < bound.parsed
    assert 32 * len(part) > 100 * _MiB  # the bound is not far beyond it either: same order
    chat = answer_bound(Surface.CHAT)
    assert chat.size < bound.size and chat.parsed < bound.parsed


async def refused(body: bytes, surface: Surface) -> UpstreamFailed:
    record = Server("")
    async with serving(keep_alive(answer(body), record)) as server, client(stall=10) as upstream:
        resp = await upstream.request("POST", server.url, headers={}, body=b"{}")
        with pytest.raises(UpstreamFailed) as caught:
            await read_answer(resp, surface)
        assert not any(upstream._idle.values())  # the connection was closed, not pooled mid-answer
    return caught.value


async def test_an_answer_that_would_parse_past_its_bound_is_a_clean_502() -> None:
    body = repeated(b'{"a":"SECRET"}', 24 * _MiB)  # under the 64 MiB size cap, ~500 MiB once parsed
    error = await refused(body, Surface.CHAT)
    assert error.message == "The model backend's answer is too large to process." and not error.retryable
    assert "SECRET" not in str(error) and error.__cause__ is None


async def test_an_answer_past_its_size_is_refused_and_a_declared_one_before_it_is_read() -> None:
    await refused(b'"' + b"x" * (65 * _MiB) + b'"', Surface.RERANK)

    async def announces(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n{" % (300 * _MiB))
        await writer.drain()
        await reader.read()  # sends nothing more: the client must not wait for the body

    async with serving(announces) as server, client(stall=30) as upstream:
        resp = await upstream.request("POST", server.url, headers={}, body=b"{}")
        with pytest.raises(UpstreamFailed):
            await asyncio.wait_for(read_answer(resp, Surface.EMBEDDINGS), 20)


async def test_real_answers_are_read_whole() -> None:
    record = Server("")
    body = embeddings(16, 3072, pretty=True)
    async with serving(keep_alive(answer(body), record)) as server, client() as upstream:
        for surface in (Surface.EMBEDDINGS, Surface.CHAT):
            resp = await upstream.request("POST", server.url, headers={}, body=b"{}")
            assert await read_answer(resp, surface) == body
        assert server.connections == 1


_PEAK = """
import asyncio, sys
import orjson
from gateway.providers import Surface, read_answer
from server.domain.networks import Reach
from server.egress import EgressGuard
from server.errors import UpstreamFailed
from server.upstream_http import UpstreamClient

def peak() -> int:  # bytes; VmHWM starts afresh at exec (ru_maxrss would carry the forking parent's)
    with open("/proc/self/status") as status:
        return 1024 * next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

async def main() -> None:
    upstream = UpstreamClient(EgressGuard(None, allow_loopback=True), Reach.PLATFORM)
    before = peak()
    resp = await upstream.request("POST", sys.argv[1], headers={}, body=b"{}")
    try:
        parsed = orjson.loads(await read_answer(resp, Surface.CHAT))
        outcome = "parsed"
    except UpstreamFailed:
        outcome = "refused"
    print(outcome, peak() - before)
    await upstream.close()

asyncio.run(main())
"""


async def peak_rss_growth(body: bytes) -> tuple[str, int]:
    """Read and parse `body` as a chat answer in a process of its own: the outcome, and how far its peak RSS grew."""
    record = Server("")
    async with serving(keep_alive(answer(body), record)) as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _PEAK, server.url, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    outcome, grown = out.decode().split()
    return outcome, int(grown)


async def test_a_hostile_answer_costs_a_worker_little_memory() -> None:
    """A 63 MiB answer of one-key dicts took a worker's peak RSS from 62 MiB to 2151 MiB; refused as it arrives, it
    costs a few MiB."""
    outcome, grown = await peak_rss_growth(repeated(b'{"a":0}', 63 * _MiB))
    assert outcome == "refused"
    assert grown < 64 * _MiB, grown / _MiB


async def test_the_worst_answer_still_parsed_stays_within_the_bound() -> None:
    """The most amplifying shape (a list per float), just under the chat bound: parsed, and the worker's peak RSS
    grows by less than the bound says."""
    bound = answer_bound(Surface.CHAT).parsed
    unit = b"[0.5]"
    body = repeated(unit, int(0.95 * bound / parse_cost(unit + b",") * (len(unit) + 1)))
    assert parse_cost(body) < bound
    outcome, grown = await peak_rss_growth(body)
    assert outcome == "parsed"
    assert grown < bound, grown / _MiB
