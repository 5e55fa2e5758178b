"""The per-process pool of MCP client sessions the tool loop calls tools through.

Connecting is most of the cost of one tool call (TCP, the version negotiation, `tools/list`: three round trips and
~4 ms of CPU), so a session outlives the turn that opened it and serves every later turn with the same key:
the server URL plus every header sent (stored credentials, static headers, a per-user OAuth token), hashed. Two
callers share a session only when they would send exactly the same credentials; a per-user token never reaches a
session opened with another one, and a changed registration (new token, new headers, new URL) gets a new session
while the old one idles out unused.

Each session is owned by a background task that opens it, waits, and closes it in that same task: the SDK's
transports are anyio task groups, which must be entered and left by one task. Requests are sent from the callers'
own tasks (the SDK correlates concurrent requests by id), so concurrent turns are not serialised behind one queue.
A session is closed when it has been idle for `idle_seconds`, when a request on it fails or times out (the next
call reconnects; a request whose caller left is withdrawn by the SDK and the session serves on, so one client gone
does not fail other turns' calls), when a network policy it was opened under is removed (its connections were
checked against that policy: the next call opens a new session, checked by the egress guard again, while calls
already running finish), when the pool is full and it is the least recently used idle one, and when the pool closes
(app cleanup). `tools/list` answers are kept per session for `list_ttl_seconds`: a turn needs the listing, and
servers change their tools rarely (a server that announces a change is re-listed when the entry expires).

A failed request is sent again, once, on a fresh session only when it cannot have reached a tool (tool_client.Unsent:
the server answered 404 to the session's id, as a restarted server does, or the connection was refused or broke
while the request was being written). Timeouts, tool errors and failures after the request was sent are never
repeated: the tool may have run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from server.domain.networks import IPNetwork
from server.egress import EgressGuard
from server.mcp.tool_client import (
    UNSENT,
    McpSession,
    McpTool,
    ToolResult,
    ToolSource,
    Unsent,
    checked_size,
    failure,
)

__all__ = ["PooledConnection", "SessionPool"]

log = logging.getLogger("switchboard.mcp.pool")


def _key(source: ToolSource) -> str:
    """The pool key: the URL and every header name and value (credentials included), as a digest so the pool's
    own table holds no secret."""
    digest = hashlib.sha256(source.url.encode())
    for name, value in sorted((k.lower(), v) for k, v in source.headers.items()):
        digest.update(b"\0" + name.encode() + b"\0" + value.encode())
    return digest.hexdigest()


@dataclass
class _Entry:
    key: str
    session: McpSession
    networks: frozenset[IPNetwork] = frozenset()  # what the network policies allowed when it was opened
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)
    tools: list[McpTool] | None = None
    tools_until: float = 0.0


class SessionPool:
    """One per gateway process (see the module docstring). Use from the process's event loop; `close()` on app
    cleanup."""

    def __init__(
        self,
        guard: EgressGuard,
        *,
        tls: ssl.SSLContext,
        timeout: float,
        max_result_bytes: int,
        idle_seconds: float = 60.0,
        max_sessions: int = 256,
        list_ttl_seconds: float = 10.0,
    ) -> None:
        self._guard = guard
        self._tls = tls
        self._timeout = timeout
        self._max_result_bytes = max_result_bytes
        self._idle = idle_seconds
        self._max = max_sessions
        self._list_ttl = list_ttl_seconds
        self._entries: dict[str, _Entry] = {}
        self._owners: set[asyncio.Task[None]] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._entries)

    def connection(self, source: ToolSource) -> PooledConnection:
        """A turn's handle on `source` (what the loop calls `list_tools`/`call_tool`/`close` on)."""
        return PooledConnection(self, source)

    async def list_tools(self, source: ToolSource) -> list[McpTool]:
        async def work(entry: _Entry) -> list[McpTool]:
            now = time.monotonic()
            if entry.tools is not None and now < entry.tools_until:
                return entry.tools
            tools = await entry.session.list_tools()
            entry.tools, entry.tools_until = tools, time.monotonic() + self._list_ttl
            return tools

        tools: list[McpTool] = await self._use(source, "tools/list", work)
        return tools

    async def call_tool(self, source: ToolSource, name: str, arguments: dict[str, Any]) -> ToolResult:
        async def work(entry: _Entry) -> ToolResult:
            return await entry.session.call_tool(name, arguments)

        answer: ToolResult = await self._use(source, "tools/call", work)
        return checked_size(name, answer, self._max_result_bytes)

    async def _use(self, source: ToolSource, what: str, work: Any) -> Any:
        deadline = asyncio.get_running_loop().time() + self._timeout
        try:
            async with asyncio.timeout_at(deadline):
                networks = await self._guard.allowed_networks()
        except Exception as exc:
            raise failure(source, what, exc) from None
        for first in (True, False):
            entry = self._entry(source, networks)
            entry.in_flight += 1
            sent = Unsent()
            try:
                async with asyncio.timeout_at(deadline):
                    await entry.ready.wait()
                    if entry.error is not None:
                        raise entry.error
                    reset = UNSENT.set(sent)
                    try:
                        return await work(entry)
                    finally:
                        UNSENT.reset(reset)
            except asyncio.CancelledError:
                # The caller left (its client hung up): the SDK withdraws the request and the session serves on,
                # so one client gone does not fail other turns' calls on the same session.
                raise
            except Exception as exc:
                self._discard(entry)  # a failure or a timeout: the session is not trusted again
                if first and sent.unsent and not isinstance(exc, TimeoutError):
                    # The server had forgotten the session (it restarted) and refused the request before any tool
                    # ran, so it is sent once more on a fresh session. Any other failure may have reached the tool
                    # and is never repeated.
                    continue
                raise failure(source, what, exc) from None
            finally:
                entry.in_flight -= 1
                entry.last_used = time.monotonic()
                if entry.in_flight == 0 and self._entries.get(entry.key) is not entry:
                    entry.stop.set()  # retired (see _entry) and now idle
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _entry(self, source: ToolSource, networks: frozenset[IPNetwork]) -> _Entry:
        if self._closed:
            raise RuntimeError("the MCP session pool is closed")
        key = _key(source)
        entry = self._entries.get(key)
        if entry is not None and not entry.stop.is_set():
            if entry.networks <= networks:
                return entry
            # A network policy was removed since this session was opened: its connections were checked against
            # the old policies, so it is retired (no new calls; it closes once the running ones finish) and a new
            # session, whose connections the egress guard checks again, takes its place.
            del self._entries[key]
            if entry.in_flight == 0:
                entry.stop.set()
        if len(self._entries) >= self._max:
            self._evict_one()
        session = McpSession(
            self._guard, source, timeout=self._timeout, tls=self._tls, max_result_bytes=self._max_result_bytes
        )
        entry = _Entry(key, session, networks)
        self._entries[key] = entry
        owner = asyncio.get_running_loop().create_task(self._own(entry), name="mcp-session")
        self._owners.add(owner)
        owner.add_done_callback(self._owners.discard)
        return entry

    def _evict_one(self) -> None:
        """Make room: the least recently used idle session goes (busy ones are left to finish; the pool may then
        hold one more than its size until they do)."""
        idle = [e for e in self._entries.values() if e.in_flight == 0]
        if idle:
            self._discard(min(idle, key=lambda e: e.last_used))

    def _discard(self, entry: _Entry) -> None:
        entry.stop.set()
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]

    async def _own(self, entry: _Entry) -> None:
        """The owner task: open, serve until stopped or idle, close (all in this task)."""
        try:
            async with asyncio.timeout(self._timeout):
                await entry.session.open()  # on failure the session has closed what it opened
        except BaseException as exc:
            entry.error = exc if isinstance(exc, Exception) else TimeoutError()
            entry.ready.set()
            self._discard(entry)
            if not isinstance(exc, Exception):
                raise
            return
        entry.ready.set()
        try:
            await self._serve(entry)
        finally:
            self._discard(entry)
            await entry.session.close()

    async def _serve(self, entry: _Entry) -> None:
        while not entry.stop.is_set():
            wait = entry.last_used + self._idle - time.monotonic()
            if wait <= 0:
                if entry.in_flight == 0:
                    return
                wait = self._idle  # busy past its idle time: look again later
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await entry.stop.wait()

    async def close(self) -> None:
        """Close every session (app cleanup): each owner closes its own."""
        self._closed = True
        for entry in list(self._entries.values()):
            self._discard(entry)
        if self._owners:
            await asyncio.gather(*self._owners, return_exceptions=True)


class PooledConnection:
    """A turn's handle on one pooled source; `close()` releases nothing (the pool owns the session)."""

    def __init__(self, pool: SessionPool, source: ToolSource) -> None:
        self.source = source
        self._pool = pool

    async def list_tools(self) -> list[McpTool]:
        return await self._pool.list_tools(self.source)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return await self._pool.call_tool(self.source, name, arguments)

    async def close(self) -> None:
        return None
