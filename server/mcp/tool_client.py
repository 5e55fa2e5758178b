"""Calling an MCP server's tools: the official `mcp` SDK client over an egress-guarded HTTP client.

A `ToolSource` is anything the tool loop reaches as an MCP server by URL with headers: a registered ExternalMcpServer
today (its stored credentials and static headers already folded into `headers`), other platform-served MCP servers
later. `McpSession` is one open SDK session to one source, the protocol version picked by the SDK's negotiation
(`server/discover` for 2026-07-28 servers, the `initialize` handshake for older ones); the tool loop keeps them in
the per-process pool of server.mcp.pool, `ToolConnection` is the unpooled one-use client.

Failures never carry exception text to callers: `ToolFailure` holds a friendly message (the model sees it as the
tool's output); what went wrong is logged without arguments or results.

Every answer is bounded before it is read whole (server.egress: the guarded httpx client refuses a body past its bound
once decoded, whatever its `Content-Encoding`): a tools/call answer at `call_answer_bytes` of the result limit, every
other one (a tools/list page, the version negotiation) at `LIST_ANSWER_BYTES`; an event stream's events at the larger
of the two. A listing's tools together are held to `LIST_ANSWER_BYTES` too, however many pages they come in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import Awaitable, Mapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpcore2
import orjson
from mcp import Client, ClientSession, types
from mcp.client.context import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from server.egress import ANSWER_BOUND, AnswerBound, EgressGuard
from server.mcp.tool_schemas import problems, vet

__all__ = [
    "LIST_ANSWER_BYTES",
    "UNSENT",
    "McpSession",
    "McpTool",
    "ToolConnection",
    "ToolFailure",
    "ToolResult",
    "ToolSource",
    "Unsent",
    "call_answer_bytes",
    "checked_size",
    "failure",
    "tls_context",
]

log = logging.getLogger("switchboard.mcp.tools")

T = TypeVar("T")

_CLOSE_SECONDS = 5.0
# Every answer but a tools/call's: a tools/list page (a few hundred tools with their schemas is well under 1 MiB),
# the version negotiation, a JSON-RPC error.
LIST_ANSWER_BYTES = 4 * 1024 * 1024
_CALL_ANSWER_FLOOR = 1024 * 1024
# httpcore trace events (and their exceptions) after which a request cannot have reached the server whole. A refusal
# by the egress guard is none of these (it is not a connect error), so it is never retried.
_UNSENT: dict[str, type[Exception] | tuple[type[Exception], ...]] = {
    "connection.connect_tcp.failed": httpcore2.ConnectError,
    "http11.send_request_headers.failed": (httpcore2.WriteError, httpcore2.ConnectError),
    "http11.send_request_body.failed": (httpcore2.WriteError, httpcore2.ConnectError),
}


@dataclass(frozen=True)
class ToolSource:
    label: str  # the model-visible prefix of its tools and the `server_label` of its items
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None

    def listed(self) -> dict[str, Any]:
        """As an `mcp_list_tools` item lists it."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "annotations": self.annotations,
        }


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool


@functools.cache
def tls_context(trusted_ca_file: str = "") -> ssl.SSLContext:
    """The TLS trust of MCP connections: the system's CAs, plus the installer's trusted CA bundle when one is named
    (Settings.mcp_trusted_ca_file). Built once per process per bundle."""
    context = ssl.create_default_context()
    if trusted_ca_file:
        context.load_verify_locations(cafile=trusted_ca_file)
    return context


@dataclass
class Unsent:
    """Set while one call runs (`UNSENT`): `unsent` becomes True when the call's request failed before any tool
    could run: the server answered 404 to the session's Mcp-Session-Id (what the specification has a server do
    after it restarted or expired the session), or the connection was refused or broke while the request was
    written. Failures after the request was sent leave it False: the tool may have run. Per call, not per session:
    a call that reached the old server as it went down is not confused with a sibling the new one refused. The SDK
    sends each request in its caller's context, so the HTTP hooks see the caller's holder."""

    unsent: bool = False


UNSENT: ContextVar[Unsent | None] = ContextVar("mcp_unsent", default=None)
# The bound of the answers to the request being sent (the SDK sends it in its caller's context, as for UNSENT).
_ANSWER: ContextVar[AnswerBound | None] = ContextVar("mcp_answer_bound", default=None)


def call_answer_bytes(max_result_bytes: int) -> int:
    """The bound of a tools/call answer: the result travels JSON-escaped (non-ASCII text as `\\uXXXX`, up to three
    times its UTF-8 size) and framed, and a tool with an output schema sends it twice (as text and as structured
    content); the floor leaves a small result limit to `checked_size`, whose refusal names the tool."""
    return max(4 * max_result_bytes, _CALL_ANSWER_FLOOR)


def _mark_unsent() -> None:
    holder = UNSENT.get()
    if holder is not None:
        holder.unsent = True


class ToolFailure(Exception):
    """The call could not be made or answered; `message` is safe to show to the model and the client."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.timed_out = timed_out


def _result_text(content: list[Any]) -> str:
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:  # images, audio, resources: the model gets their JSON form
            parts.append(orjson.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True)).decode())
    return "\n".join(parts)


class McpSession:
    """One open SDK client session to one source: `open()` and `close()` from the same task (the SDK's transports
    are anyio task groups, entered and exited in one task); `list_tools`/`call_tool` from any task of the loop (the
    SDK correlates concurrent requests by id). Failures are raised as they come; callers map them (`failure`)."""

    def __init__(
        self, guard: EgressGuard, source: ToolSource, *, timeout: float, tls: ssl.SSLContext, max_result_bytes: int
    ) -> None:
        self.source = source
        self._guard = guard
        self._tls = tls
        self._timeout = timeout
        self._call_answer_bytes = call_answer_bytes(max_result_bytes)
        self._stack: AsyncExitStack | None = None
        self._client: Client | None = None

    async def open(self) -> Client:
        if self._client is not None:
            return self._client
        try:
            self._stack, self._client = await self._connect(self._streamable)
        except (TimeoutError, asyncio.CancelledError):
            raise
        except Exception as exc:
            # Not a streamable HTTP endpoint (or not reachable): the 2024-11-05 HTTP+SSE transport is the fallback
            # the specification gives for servers that refuse the POST.
            log.info(
                "MCP server %r: streamable HTTP failed (%s), trying HTTP+SSE", self.source.label, type(exc).__name__
            )
            self._stack, self._client = await self._connect(self._sse)
        return self._client

    async def _connect(self, transport: Any) -> tuple[AsyncExitStack, Client]:
        stack = AsyncExitStack()
        try:
            # mode "auto": the version is negotiated
            client = Client(await transport(stack), cache=None, elicitation_callback=_decline)
            await stack.enter_async_context(client)
            _check_outputs_safely(client.session)
        except BaseException:
            await _close_stack(stack)
            raise
        return stack, client

    async def _streamable(self, stack: AsyncExitStack) -> Any:
        http = await stack.enter_async_context(
            self._guard.httpx_client(
                max_answer_bytes=LIST_ANSWER_BYTES,
                headers=dict(self.source.headers),
                timeout=self._timeout,
                transport_options={"verify": self._tls},
                event_hooks={"request": [self._trace], "response": [self._watch]},
            )
        )
        # An answer sent as an event is bounded as it would be as a JSON body.
        events = max(self._call_answer_bytes, LIST_ANSWER_BYTES)
        return streamable_http_client(self.source.url, http_client=http, max_sse_event_size=events)

    async def _trace(self, request: Any) -> None:
        request.extensions["trace"] = self._sending
        bound = _ANSWER.get()
        if bound is not None:
            request.extensions[ANSWER_BOUND] = bound

    async def _sending(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace of one request: a connection that could not be made, or broke while the request was
        still being written, means the server never had the whole request."""
        if event in _UNSENT and isinstance(info.get("exception"), _UNSENT[event]):
            _mark_unsent()

    async def _watch(self, response: Any) -> None:
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            _mark_unsent()

    async def _sse(self, stack: AsyncExitStack) -> Any:
        guard = self._guard

        tls = self._tls

        def guarded(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
            return guard.httpx_client(
                max_answer_bytes=LIST_ANSWER_BYTES,
                headers=headers,
                timeout=timeout,
                auth=auth,
                transport_options={"verify": tls},
            )

        return sse_client(
            self.source.url,
            headers=dict(self.source.headers),
            timeout=self._timeout,
            sse_read_timeout=self._timeout,
            httpx_client_factory=guarded,
        )

    async def list_tools(self) -> list[McpTool]:
        client = await self.open()
        tools: list[McpTool] = []
        listed_bytes = 0
        cursor: str | None = None
        for _ in range(100):  # pages; a server that never stops paging is cut off
            page = await self._bounded("tools/list", LIST_ANSWER_BYTES, client.list_tools(cursor=cursor))
            for tool in page.tools:
                listed = McpTool(
                    name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema or {"type": "object"}),
                    annotations=(
                        tool.annotations.model_dump(mode="json", exclude_none=True)
                        if tool.annotations is not None
                        else None
                    ),
                )
                # Each page is bounded as it arrives; the listing as a whole too, or a server paging up to the page
                # limit could make one turn hold (and store, and send the model) 100 pages' worth of tools.
                listed_bytes += len(orjson.dumps(listed.listed()))
                if listed_bytes > LIST_ANSWER_BYTES:
                    raise ToolFailure(
                        f"The MCP server {self.source.label!r} listed more than {LIST_ANSWER_BYTES} bytes of tools, "
                        "more than the platform accepts."
                    )
                tools.append(listed)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        client = await self.open()
        result = await self._bounded("tools/call", self._call_answer_bytes, client.call_tool(name, arguments))
        return ToolResult(_result_text(list(result.content)), bool(result.is_error))

    async def _bounded(self, what: str, max_bytes: int, request: Awaitable[T]) -> T:
        """`request`, its answers bounded at `max_bytes`; one refused for its size fails it with a ToolFailure saying
        so (the SDK itself reports only that the connection was lost)."""
        bound = AnswerBound(max_bytes)
        reset = _ANSWER.set(bound)
        try:
            return await request
        except Exception:
            if bound.exceeded:
                raise ToolFailure(
                    f"The MCP server {self.source.label!r} answered {what} with more than {max_bytes} bytes, more "
                    "than the platform accepts."
                ) from None
            raise
        finally:
            _ANSWER.reset(reset)

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await _close_stack(stack)


async def _decline(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """A server asking for the user's input mid-call (elicitation, or a 2026-07-28 `input_required` result carrying
    one) gets a decline: nobody can answer inside the tool loop, and declining is the answer a server must already
    handle safely (nothing confirmed, nothing submitted). The SDK's default, an error, would fail the call instead
    of letting the server go on; with a decline it retries with the server's `requestState` echoed, as SEP-2322
    requires."""
    return types.ElicitResult(action="decline")


def _check_outputs_safely(session: ClientSession) -> None:
    """The SDK checks a tool's structured result against the tool's `outputSchema` with the `jsonschema` package,
    whose regex engine backtracks: a server's `pattern` and its own result could hold the event loop for minutes. The
    same check here goes through server.mcp.tool_schemas (vetted, linear-time); a schema it cannot apply is left to
    the server, as for input schemas (the loop hands the model the result's text, not its structured content)."""

    async def validate_tool_result(name: str, result: types.CallToolResult) -> None:
        # The SDK's cache of listed output schemas by tool name (re-listed, as the SDK does, for an unknown tool).
        if name not in session._tool_output_schemas:
            await session.list_tools()
        schema = session._tool_output_schemas.get(name)
        if schema is None:
            return
        if result.structured_content is None and "structured_content" not in result.model_fields_set:
            raise RuntimeError("the tool has an output schema but returned no structured content")
        if problems(vet(schema), result.structured_content):
            raise RuntimeError("the tool's structured content does not match its output schema")

    session.validate_tool_result = validate_tool_result  # type: ignore[method-assign]


def failure(source: ToolSource, what: str, exc: BaseException) -> ToolFailure:
    """The friendly failure for what went wrong talking to `source` (logged by exception type only, or by the
    message of a ToolFailure, which names no server text)."""
    if isinstance(exc, TimeoutError):
        return ToolFailure(f"The MCP server {source.label!r} did not answer in time.", timed_out=True)
    if isinstance(exc, ToolFailure):  # already friendly (an answer refused for its size)
        log.warning("MCP %s on server %r failed: %s", what, source.label, exc.message)
        return exc
    log.warning("MCP %s on server %r failed: %s", what, source.label, type(exc).__name__)
    return ToolFailure(f"The MCP server {source.label!r} could not be reached or failed.")


def checked_size(name: str, answer: ToolResult, max_result_bytes: int) -> ToolResult:
    if len(answer.text.encode()) > max_result_bytes:
        raise ToolFailure(f"The tool {name!r} returned a result larger than the platform accepts.")
    return answer


class ToolConnection:
    """One source's connection for one use (from one task; `close()` at the end): opened on first use, closed on
    the first failure (a half-answered session is not reused). The tool loop uses the pooled sessions of
    server.mcp.pool instead; this is the unpooled client (conformance harness, one-off calls)."""

    def __init__(
        self,
        guard: EgressGuard,
        source: ToolSource,
        *,
        timeout: float,
        max_result_bytes: int,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.source = source
        self._timeout = timeout
        self._max_result_bytes = max_result_bytes
        # One context per process (see tls_context): building one per connection costs ~50 ms of CPU.
        self._session = McpSession(
            guard, source, timeout=timeout, tls=tls or tls_context(), max_result_bytes=max_result_bytes
        )

    async def _guarded(self, what: str, work: Any) -> Any:
        try:
            async with asyncio.timeout(self._timeout):
                return await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.close()
            raise failure(self.source, what, exc) from None

    async def list_tools(self) -> list[McpTool]:
        tools: list[McpTool] = await self._guarded("tools/list", self._session.list_tools())
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        answer: ToolResult = await self._guarded("tools/call", self._session.call_tool(name, arguments))
        return checked_size(name, answer, self._max_result_bytes)

    async def close(self) -> None:
        await self._session.close()


async def _close_stack(stack: AsyncExitStack) -> None:
    try:
        async with asyncio.timeout(_CLOSE_SECONDS):
            await stack.aclose()
    except asyncio.CancelledError:
        raise
    except Exception:  # closing a broken session: nothing more to do
        log.debug("closing an MCP session failed", exc_info=False)
