"""Content capture in the gateway (server.capture): which requests it covers, the header that tells their callers,
and the bodies it keeps.

Off (the usual case), a request costs one cached lookup: the tenant's scopes whose capture is on, per process, for at
most `api_key_cache_seconds` and dropped at once when a policy changes (`Topic.CAPTURE`, server.invalidation); a
tenant with none answers an empty set and nothing else happens. A covered request gets an `Exchange`
(`request[CAPTURE]`): every answer to it carries `X-Switchboard-Content-Capture: on`; the request body is kept as
read (a transcription's as its form fields and the size of each file), and the answer as written: a streamed answer
through a tee on the response's writer (installed when its headers are prepared), a buffered one from its body.
The metered call (gateway.calls) hands its usage event to the exchange (`Exchange.event`) rather than to the meter;
once the answer is known, both go to the meter together (`finish`), which seals and writes them in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter

from gateway.context import PRINCIPAL
from gateway.event_stream import EventStream
from server.capture.exchange import Covered, Exchange, covers
from server.capture.policies import enabled_scopes
from server.domain.principal import Principal
from server.invalidation import Topic
from server.metering import Meter
from server.store.db import Database
from server.ttlcache import TtlCache

__all__ = ["CAPTURE", "HEADER", "POLICIES", "CapturePolicies", "finish", "form_summary", "tee"]

HEADER = "X-Switchboard-Content-Capture"


class CapturePolicies:
    """The process's cache of each tenant's scopes whose capture is on."""

    def __init__(self, db: Database, *, ttl: float, limit: int) -> None:
        self._db = db
        self._limit = limit
        self._on: TtlCache[Covered] = TtlCache(ttl, name="capture_policies")
        # A changed policy reaches every process at once (server.invalidation); the TTL is the fallback.
        db.invalidations.on(Topic.CAPTURE, lambda _: self._on.forget())

    async def _load(self, tenant_id: str) -> Covered:
        async with self._db.read() as session:
            return await enabled_scopes(session, tenant_id)

    async def exchange_for(self, principal: Principal) -> Exchange | None:
        key = principal.api_key
        tenant_id = key.tenant_id if key is not None else principal.scoped_tenant_id
        if not tenant_id:
            return None
        on = self._on.fresh(tenant_id)  # the usual case, without a coroutine
        if on is None:
            on = await self._on.get(tenant_id, lambda: self._load(tenant_id))
        if not on or not covers(on, principal):
            return None
        return Exchange(self._limit)


POLICIES = web.AppKey("capture_policies", CapturePolicies)
CAPTURE = web.RequestKey("capture", Exchange)


def _tee(writer: AbstractStreamWriter, keep: Callable[[Any], None]) -> None:
    """Make a response's payload writer keep what the handler writes of the body (chunked framing and compression
    are the writer's own business: what it is given is the body as the client reads it). Its `write` and
    `write_eof` are replaced on this one writer (aiohttp makes one per request) by functions handing each chunk to
    `keep` and returning the writer's own coroutine. A proxy in the writer's place cost every chunk a coroutine of
    its own (550 ns a write added, against 360 ns), and a subclass swapped in (`__class__`) slowed the writer's own
    attribute reads as much."""
    write, write_eof = writer.write, writer.write_eof

    def teed(chunk: bytes | bytearray | memoryview, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, None]:
        keep(chunk)
        return write(chunk, *args, **kwargs)

    def teed_eof(chunk: bytes = b"") -> Coroutine[Any, Any, None]:
        if chunk:
            keep(chunk)
        # The writer's own methods back: that ends the reference cycle these functions make with it (writer, teed,
        # the writer's bound method), which only the garbage collector would free (7 us a request), and is left to
        # it only when a stream is cut off before its end.
        del writer.write, writer.write_eof
        return write_eof(chunk)

    writer.write = teed  # type: ignore[method-assign]
    writer.write_eof = teed_eof  # type: ignore[method-assign]


def tee(response: web.StreamResponse, exchange: Exchange) -> None:
    """Keep what is written of a covered request's answer (called as its headers are prepared, when the response
    has its writer and nothing of the body has been written). Only a streamed answer needs it: a buffered one is
    prepared once the middleware has handed its body and usage to the meter, so its writes are not wrapped. aiohttp
    has no public hook for the bytes a response writes; its `_payload_writer` is where they all go (`write`, and
    `write_eof` with the last bytes). tests/test_capture.py fails if an upgrade changes that (a stream relayed in
    several writes must read back whole)."""
    response.headers[HEADER] = "on"
    if exchange.closed:  # a buffered answer, prepared after the handler: `finish` has taken its body already
        return
    writer = response._payload_writer  # set just before aiohttp sends this signal; a response is prepared once
    if writer is not None:
        _tee(writer, exchange.response)


def form_summary(fields: list[tuple[str, bytes, str | None, str | None]]) -> bytes:
    """A multipart request as it is captured: its text fields, and each file part by name, type and size (audio is
    not kept: the transcript in the answer is the content)."""
    text: dict[str, str] = {}
    files: list[dict[str, Any]] = []
    for name, value, filename, content_type in fields:
        if filename is None:
            text[name] = value.decode(errors="replace")
        else:
            files.append({"field": name, "filename": filename, "content_type": content_type, "bytes": len(value)})
    return orjson.dumps({"fields": text, "files": files})


def finish(request: web.Request, meter: Meter, exchange: Exchange, response: web.StreamResponse | None) -> None:
    """The request is answered (or its client is gone): hand a metered call's usage and exchange to the meter. A
    buffered answer's body is taken here (aiohttp writes it after the handler); a streamed one was kept as written,
    but for its last bytes, which leave with its end after the handler too (gateway.event_stream)."""
    event = exchange.event
    if event is None:  # not an inference call (or refused before it was metered): nothing is stored
        exchange.closed = True
        return
    if isinstance(response, web.Response) and (not response.prepared or isinstance(response, EventStream)):
        body = response.body
        if isinstance(body, bytes):
            exchange.response(body)
    key = request[PRINCIPAL].api_key
    account = (key.service_account_id if key is not None else None) or ""
    exchange.usage = (
        event.tenant_id,
        event.api_key_id,
        account,
        event.user_id,
        event.model_id,
        event.call_kind,
        event.status,
    )
    exchange.occurred_at = event.occurred_at
    meter.captured(event, exchange)
