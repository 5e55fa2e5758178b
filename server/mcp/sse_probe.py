"""Probing a server of the 2024-11-05 HTTP+SSE transport, the fallback the tool loop also takes.

Such a server refuses the `initialize` POST at its URL (400, 404 or 405): its URL is an SSE stream. A GET opens it,
the first `endpoint` event names the URI to POST messages to (same origin only, as the mcp SDK's client insists),
and the answer to a POST arrives on the stream as a `message` event. `server_name` does exactly that once, bounded
in bytes and time, to confirm the server and learn its name; closing the stream ends the server's session.

The response must come from the egress-guarded session (`oauth_client.probe` opens it); this module only reads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urljoin, urlsplit

import aiohttp
import orjson

__all__ = ["FALLBACK_STATUSES", "NotSse", "server_name"]

# What a streamable-HTTP POST to an HTTP+SSE endpoint answers (research/mcp.md: era detection).
FALLBACK_STATUSES = frozenset({400, 404, 405})
_MAX_LINE = 64 * 1024
_MAX_BYTES = 1024 * 1024
_SECONDS = 15.0


class NotSse(Exception):
    """The URL does not speak the HTTP+SSE transport (no stream, no endpoint event, another origin)."""


async def _events(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    """(event, data) of each event on the stream, until `_MAX_BYTES` have been read."""
    event, read = "message", 0
    data: list[str] = []
    while read < _MAX_BYTES:
        raw = await resp.content.readline()
        if not raw:
            return
        read += len(raw)
        line = raw[:_MAX_LINE].decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def _same_origin(a: str, b: str) -> bool:
    first, second = urlsplit(a), urlsplit(b)
    return (first.scheme, first.netloc) == (second.scheme, second.netloc)


def _name_of(data: str) -> str | None:
    """serverInfo.name of the answer to our initialize (id 1); None for any other message."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.get("id") != 1:
        return None
    info = message.get("result", {}).get("serverInfo", {}) if isinstance(message.get("result"), dict) else {}
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else ""


async def _converse(
    http: aiohttp.ClientSession, stream: aiohttp.ClientResponse, server_url: str, initialize: bytes
) -> str:
    events = _events(stream)
    async for event, data in events:
        if event == "endpoint":
            endpoint = urljoin(server_url, data.strip())
            if not _same_origin(endpoint, server_url):
                raise NotSse("the endpoint event names another origin")
            break
    else:
        raise NotSse("no endpoint event")
    headers = {"Content-Type": "application/json"}
    async with http.post(endpoint, data=initialize, headers=headers, allow_redirects=False) as posted:
        if posted.status >= 300:
            raise NotSse(f"the message endpoint answered HTTP {posted.status}")
    async for event, data in events:
        if event == "message" and (name := _name_of(data)) is not None:
            return name
    raise NotSse("no answer to initialize")


async def server_name(
    http: aiohttp.ClientSession, stream: aiohttp.ClientResponse, server_url: str, initialize: bytes
) -> str:
    """The server's own name (empty when it gives none), from an open 200 `text/event-stream` response to a GET of
    `server_url`; NotSse when the stream does not behave as the HTTP+SSE transport."""
    if "text/event-stream" not in stream.headers.get("Content-Type", ""):
        raise NotSse("not an event stream")
    try:
        async with asyncio.timeout(_SECONDS):
            return await _converse(http, stream, server_url, initialize)
    except TimeoutError:
        raise NotSse("the stream went quiet") from None
    except ValueError:  # aiohttp: a line beyond its buffer
        raise NotSse("an oversized line") from None
