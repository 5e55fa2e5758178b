"""The gateway's upstream HTTP/1.1 client (server.upstream_http) against real servers on loopback: plain asyncio
servers that answer exactly the bytes a test gives them, so every framing, misbehaviour and timing is a real one.
The egress guarantees (loopback, own ports, policies on pooled connections) are in test_egress.py, where this
client is one of the clients every guarantee is checked through."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from server.domain.networks import Reach
from server.egress import EgressGuard
from server.upstream_http import _HIGH_WATER, UpstreamBroke, UpstreamClient
from tests.pki import write_pki

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


@dataclass
class Server:
    url: str
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    closed: int = 0


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return head + await reader.readexactly(length)


@contextlib.asynccontextmanager
async def serving(answer: Answer, tls: ssl.SSLContext | None = None) -> AsyncIterator[Server]:
    """A loopback server: `answer` handles each connection after its first request was read into `requests`."""
    server = Server("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        try:
            await answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            server.closed += 1
            writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    scheme = "https" if tls else "http"
    server.url = f"{scheme}://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        listening.close()


def keep_alive(server_answer: bytes, record: Server) -> Answer:
    """Answer every request on the connection with the same bytes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            record.requests.append(await read_request(reader))
            writer.write(server_answer)
            await writer.drain()

    return answer


def once(server_answer: bytes) -> Answer:
    """Answer the first request with these bytes, then close the connection."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(server_answer)
        await writer.drain()

    return answer


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Read the request, then answer nothing until the client closes."""
    await read_request(reader)
    await reader.read()


@contextlib.asynccontextmanager
async def client(ssl_context: ssl.SSLContext | None = None, **options: float) -> AsyncIterator[UpstreamClient]:
    guard = EgressGuard(None, allow_loopback=True)
    upstream = UpstreamClient(guard, Reach.PLATFORM, ssl_context=ssl_context, **options)
    try:
        yield upstream
    finally:
        await upstream.close()


async def fetch(upstream: UpstreamClient, url: str, body: bytes = b"{}") -> tuple[int, bytes]:
    response = await upstream.request("POST", url, headers={"Content-Type": "application/json"}, body=body)
    try:
        return response.status, await response.read(1 << 20)
    finally:
        response.release()


async def test_requests_reuse_one_keep_alive_connection_and_are_sent_as_written() -> None:
    record = Server("")
    async with serving(keep_alive(OK, record)) as server, client() as upstream:
        for _ in range(3):
            assert await fetch(upstream, f"{server.url}/v1/chat/completions?x=1", b'{"a":1}') == (200, b'{"ok":true}')
        assert server.connections == 1
    host = server.url.removeprefix("http://").encode()
    assert record.requests[0] == (
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: " + host + b"\r\nAccept-Encoding: identity\r\n"
        b"Content-Type: application/json\r\nContent-Length: 7\r\n\r\n" + b'{"a":1}'
    )


@pytest.mark.parametrize(
    ("answer", "body"),
    [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            b"hello world",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b""),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok"),
    ],
    ids=["chunked", "empty", "interim-100"],
)
async def test_framings_are_read_to_their_end_and_the_connection_reused(answer: bytes, body: bytes) -> None:
    record = Server("")
    async with serving(keep_alive(answer, record)) as server, client() as upstream:
        assert await fetch(upstream, server.url) == (200, body)
        assert await fetch(upstream, server.url) == (200, body)
        assert server.connections == 1


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\n\r\nok",  # delimited by the close
    ],
    ids=["connection-close", "http-1.0", "until-close"],
)
async def test_an_answer_that_ends_the_connection_is_read_and_the_connection_not_reused(answer: bytes) -> None:
    async with serving(once(answer)) as server, client() as upstream:
        assert await fetch(upstream, server.url) == (200, b"ok")
        assert await fetch(upstream, server.url) == (200, b"ok")
        assert server.connections == 2


async def test_an_answer_arriving_byte_by_byte_is_parsed_whole() -> None:
    answer = b"HTTP/1.1 201 Created\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\nhello"

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        for i in range(len(answer)):
            writer.write(answer[i : i + 1])
            await writer.drain()
            await asyncio.sleep(0)

    async with serving(trickle) as server, client() as upstream:
        response = await upstream.request("GET", server.url, headers={})
        assert (response.status, response.content_type, response.charset) == (201, "text/plain", "utf-8")
        assert await response.read(100) == b"hello"
        response.release()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # closed before the end of the body
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",  # closed before the last chunk
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nzz",  # a coding we did not ask for
        b"NOT HTTP AT ALL\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"x" * 100_000 + b"\r\n\r\n",  # a header block past the bound
    ],
    ids=["short-body", "unfinished-chunks", "gzip", "garbage", "huge-headers"],
)
async def test_a_broken_or_refused_answer_raises_upstream_broke(answer: bytes) -> None:
    async with serving(once(answer)) as server, client() as upstream:
        with pytest.raises(UpstreamBroke):
            await fetch(upstream, server.url)
        assert upstream._idle.get(("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]), "")) in (None, [])


async def test_an_answer_past_the_caller_bound_is_refused_and_its_connection_closed() -> None:
    body = b"x" * 200_000
    record = Server("")
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    async with serving(keep_alive(answer, record)) as server, client() as upstream:
        response = await upstream.request("GET", server.url, headers={})
        with pytest.raises(UpstreamBroke, match="too large"):
            await response.read(100_000)
        response.release()
        assert await fetch(upstream, server.url) == (200, body)  # on a new connection
        assert server.connections == 2


async def test_an_answer_past_the_high_water_mark_is_read_whole() -> None:
    """Reading whole never waits on the pause meant for slow stream readers (a large embeddings answer)."""
    body = b"z" * (4 * _HIGH_WATER)
    record = Server("")
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    async with serving(keep_alive(answer, record)) as server, client(stall=5) as upstream:
        response = await upstream.request("GET", server.url, headers={})
        assert await response.read(len(body)) == body
        response.release()
        assert await fetch(upstream, server.url, b"") == (200, body)  # the connection was kept
        assert server.connections == 1


async def test_a_silent_upstream_is_cut_off_at_the_stall_bound() -> None:
    """Silent before the headers and silent mid-body: both are cut off, within the sweep's tick of the bound."""

    async def stops(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        await reader.read()  # until the client closes

    loop = asyncio.get_running_loop()
    async with serving(silent) as server, client(stall=0.4) as upstream:
        started = loop.time()
        with pytest.raises(UpstreamBroke):
            await fetch(upstream, server.url)
        assert loop.time() - started < 5  # cut off at the bound, not left waiting (generous for a loaded machine)
    async with serving(stops) as server, client(stall=0.4) as upstream:
        response = await upstream.request("GET", server.url, headers={})
        received = []
        with pytest.raises(UpstreamBroke):
            async for data in response.chunks():
                received.append(data)
        response.release()
        assert received == [b"hello"]


async def test_idle_connections_expire_and_a_server_closed_one_is_replaced() -> None:
    # The server answers with keep-alive framing, then closes the idle connection.
    async with serving(once(OK)) as server, client() as upstream:
        assert await fetch(upstream, server.url) == (200, b'{"ok":true}')
        kept = upstream._idle[("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]), "")]
        for _ in range(100):  # bounded wait for the server's close to reach the kept connection
            if all(conn.closed for conn in kept):
                break
            await asyncio.sleep(0.05)
        assert await fetch(upstream, server.url) == (200, b'{"ok":true}')
        assert server.connections == 2

    record = Server("")
    async with serving(keep_alive(OK, record)) as server, client(keepalive=0.2) as upstream:
        await fetch(upstream, server.url)
        for _ in range(100):  # the sweep closes it after the keep-alive bound
            if server.closed:
                break
            await asyncio.sleep(0.05)
        assert server.closed == 1


async def test_a_slow_reader_pauses_the_upstream_instead_of_buffering_it() -> None:
    """A stream read slower than it arrives holds at most about the high-water mark plus one read in memory."""
    piece = b"y" * 65536
    pieces = 64  # 4 MiB

    async def fast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(piece) * pieces))
        for _ in range(pieces):
            writer.write(piece)
            await writer.drain()

    async with serving(fast) as server, client() as upstream:
        response = await upstream.request("GET", server.url, headers={})
        received, most = 0, 0
        async for data in response.chunks():
            received += len(data)
            most = max(most, len(data))
            await asyncio.sleep(0.002)
        response.release()
    assert received == len(piece) * pieces
    assert most <= _HIGH_WATER + 256 * 1024


async def test_a_header_that_would_split_the_request_is_never_sent() -> None:
    record = Server("")
    async with serving(keep_alive(OK, record)) as server, client() as upstream:
        for headers in ({"Authorization": "Bearer k\r\nX-Injected: 1"}, {"Bad Name": "v"}, {"X": "a\nb"}):
            with pytest.raises(ValueError) as err:
                await upstream.request("POST", server.url, headers=headers, body=b"{}")
            assert "Bearer" not in str(err.value)
        assert server.connections == 0


async def test_a_cancelled_request_closes_its_connection() -> None:
    async with serving(silent) as server, client() as upstream:
        task = asyncio.create_task(fetch(upstream, server.url))
        for _ in range(100):
            if server.connections:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not upstream.busy
        for _ in range(100):  # bounded wait for the close to reach the server
            if server.closed:
                break
            await asyncio.sleep(0.01)
        assert server.closed == 1


async def test_https_verifies_the_certificate_and_reuses_the_connection(tmp_path: Path) -> None:
    """TLS to the checked address with the URL's host verified: a certificate of a CA the client does not trust is
    refused before anything is sent; one it trusts is used, its connection kept alive."""
    ca, cert, key = write_pki(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    record = Server("")
    async with serving(keep_alive(OK, record), tls=served) as server:
        async with client() as upstream:  # the system's CAs only
            with pytest.raises(ssl.SSLCertVerificationError):
                await fetch(upstream, server.url)
        assert record.requests == []
        trusting = ssl.create_default_context(cafile=str(ca))
        async with client(ssl_context=trusting) as upstream:
            for _ in range(2):
                assert await fetch(upstream, server.url) == (200, b'{"ok":true}')
        assert len(record.requests) == 2
        assert server.connections == 1  # one kept-alive connection (the refused handshake never became one)


# -- upstreams that answer more than they were asked: no answer may reach another caller --


def marked(marker: bytes) -> bytes:
    body = b'{"marker":"' + marker + b'"}'
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def marker_of(request: bytes) -> bytes:
    return request.split(b'"marker":"', 1)[1].split(b'"', 1)[0]


def misbehaving(kind: str, record: Server) -> Answer:
    """Answer each request with its own marker, and misbehave after every answer:
    `late` answers after 20 ms and writes the same answer again 50 ms later, when the next request waits;
    `on-next` writes the previous answer again as soon as the next request arrives, its own 20 ms later;
    `same-write` writes a second answer right behind the first; `partial` starts a second message's head;
    `overlong` sends more body than Content-Length announced."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        late: set[asyncio.Task[None]] = set()
        previous = b""

        async def again(data: bytes) -> None:
            await asyncio.sleep(0.05)
            if not writer.is_closing():
                writer.write(data)

        while True:
            request = await read_request(reader)
            record.requests.append(request)
            real = marked(marker_of(request))
            if kind == "on-next":
                writer.write(previous)
                await asyncio.sleep(0.02)
                writer.write(real)
                previous = real
            elif kind == "late":
                await asyncio.sleep(0.02)  # a model takes a while: the stray lands while the next request waits
                writer.write(real)
                task = asyncio.create_task(again(real))
                late.add(task)
                task.add_done_callback(late.discard)
            elif kind == "same-write":
                writer.write(real + marked(b"stray"))
            elif kind == "partial":
                writer.write(real + b"HTTP/1.1 200 OK\r\nContent-Le")
            else:
                body = real.rsplit(b"\r\n\r\n", 1)[1]
                writer.write(real + body)
            await writer.drain()

    return answer


async def tenant_call(upstream: UpstreamClient, url: str, tenant: str, i: int) -> tuple[str, str]:
    """One request of `tenant` with a marker of its own: (sent, received) markers."""
    sent = f"{tenant}-{i}"
    response = await upstream.request(
        "POST",
        url,
        headers={"Authorization": f"Bearer key-of-{tenant}"},
        body=b'{"marker":"%s"}' % sent.encode(),
        partition=tenant,
    )
    try:
        return sent, marker_of(await response.read(1 << 20)).decode()
    finally:
        response.release()


async def tenant_calls(upstream: UpstreamClient, url: str, tenant: str, calls: int) -> list[tuple[str, str]]:
    return [await tenant_call(upstream, url, tenant, i) for i in range(calls)]


async def alternating(upstream: UpstreamClient, url: str, rounds: int = 30) -> list[tuple[str, str]]:
    """Two tenants taking turns: with one pool for both, each call reuses the connection the other tenant's call
    just gave back."""
    return [await tenant_call(upstream, url, tenant, i) for i in range(rounds) for tenant in ("tenant-a", "tenant-b")]


async def two_tenants(upstream: UpstreamClient, url: str, calls: int = 30) -> list[tuple[str, str]]:
    """Two tenants calling at the same time, their calls interleaving on the event loop."""
    first, second = await asyncio.gather(
        tenant_calls(upstream, url, "tenant-a", calls), tenant_calls(upstream, url, "tenant-b", calls)
    )
    return first + second


@pytest.mark.parametrize("kind", ["same-write", "partial", "overlong"])
async def test_bytes_past_the_answer_in_the_same_read_never_reach_a_caller(kind: str) -> None:
    """The stray bytes arrive with the answer: the answer is the caller's own, the connection is never pooled."""
    record = Server("")
    async with serving(misbehaving(kind, record)) as server, client(stall=5) as upstream:
        seen = await alternating(upstream, server.url) + await two_tenants(upstream, server.url)
        assert all(sent == received for sent, received in seen), seen
        assert server.connections == len(record.requests) == 120  # no connection served a second call


@pytest.mark.parametrize("kind", ["late", "on-next"])
async def test_a_stray_answer_to_a_waiting_request_never_reaches_another_tenant(kind: str) -> None:
    """A stray answer that arrives while the next request waits on the connection: no HTTP/1.1 client can tell it
    from the answer to that request, and back-to-back calls shift every later answer by one. Pools split by tenant
    keep each shifted answer within the tenant that asked (one pool for both gave most of these calls the other
    tenant's answer)."""
    record = Server("")
    async with serving(misbehaving(kind, record)) as server, client(stall=5) as upstream:
        seen = await alternating(upstream, server.url)
    assert len(seen) == 60
    assert all(sent.rsplit("-", 1)[0] == received.rsplit("-", 1)[0] for sent, received in seen), seen


async def test_a_pooled_connection_that_receives_anything_while_idle_is_discarded() -> None:
    record = Server("")
    async with serving(misbehaving("late", record)) as server, client(stall=5) as upstream:
        assert await tenant_calls(upstream, server.url, "tenant-a", 1) == [("tenant-a-0", "tenant-a-0")]
        key = ("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]), "tenant-a")
        kept = list(upstream._idle[key])
        for _ in range(100):  # bounded wait for the stray answer to reach the idle connection
            if all(conn.closed for conn in kept):
                break
            await asyncio.sleep(0.02)
        assert kept and all(conn.closed for conn in kept)
        assert await tenant_calls(upstream, server.url, "tenant-a", 1) == [("tenant-a-0", "tenant-a-0")]
        assert server.connections == 2
        assert not upstream._idle.get(key)  # the pool keeps nothing while it distrusts the upstream


async def test_partitions_never_share_a_connection() -> None:
    record = Server("")
    async with serving(keep_alive(OK, record)) as server, client() as upstream:
        for partition in ("tenant-a", "tenant-b", "tenant-a", "tenant-b"):
            response = await upstream.request("GET", server.url, headers={}, partition=partition)
            await response.read(100)
            response.release()
        assert server.connections == 2


async def test_bytes_not_yet_delivered_keep_a_pooled_connection_from_reuse() -> None:
    """The stray answer already sits in the socket, but the worker has been too busy to run its loop and deliver it:
    the pooled connection is still not reused, and the next call gets its own answer on a new connection. (A
    blocking server in a thread, so it writes while this loop is held.)"""
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    accepted: list[socket.socket] = []
    stray, written = threading.Event(), threading.Event()  # written: the stray goes out once

    def handle(conn: socket.socket, first: bool) -> None:
        with contextlib.suppress(OSError):  # the client resets the connection it drops
            while request := conn.recv(65536):  # a request this small arrives in one read on loopback
                conn.sendall(marked(marker_of(request)))
                if first and not written.is_set():
                    stray.wait(10)
                    conn.sendall(marked(b"stray"))
                    written.set()

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                accepted.append(conn)
                threading.Thread(target=handle, args=(conn, len(accepted) == 1), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        async with client(stall=5) as upstream:
            assert await tenant_call(upstream, url, "tenant-a", 0) == ("tenant-a-0", "tenant-a-0")
            (pooled,) = upstream._idle[("http", "127.0.0.1", int(url.rsplit(":", 1)[1]), "tenant-a")]
            stray.set()
            waiting = select.poll()  # held without the loop running, so nothing is delivered meanwhile
            waiting.register(pooled.transport.get_extra_info("socket").fileno(), select.POLLIN)
            assert waiting.poll(10_000)  # the stray bytes are in this side's socket
            assert await tenant_call(upstream, url, "tenant-a", 1) == ("tenant-a-1", "tenant-a-1")
            assert len(accepted) == 2
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


OWN_TWO = [("tenant-a-0", "tenant-a-0"), ("tenant-a-1", "tenant-a-1")]


async def test_a_distrusted_pool_keeps_connections_again_once_the_verdict_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("server.upstream_http._DISTRUST_FOR", 0.3)
    record = Server("")
    first = True

    async def strays_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal first
        stray, first = first, False
        while True:
            request = await read_request(reader)
            record.requests.append(request)
            writer.write(marked(marker_of(request)) + (marked(b"stray") if stray else b""))
            stray = False

    async with serving(strays_once) as server, client(keepalive=0.4) as upstream:
        key = ("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1]), "tenant-a")
        assert await tenant_calls(upstream, server.url, "tenant-a", 2) == OWN_TWO
        assert server.connections == 2 and not upstream._idle.get(key)  # the second was not kept either
        for _ in range(100):  # bounded wait for the sweep to forget the verdict
            if key not in upstream._distrusted:
                break
            await asyncio.sleep(0.05)
        assert await tenant_calls(upstream, server.url, "tenant-a", 2) == OWN_TWO
        assert server.connections == 3  # kept and reused again
