"""The gateway's middleware (CORS preflights, auth → handler, errors → OpenAI bodies, traffic counting and the
request-duration metric) and capped body readers.

Errors: every `SwitchboardError` becomes an OpenAI error body through `server.errors.wire_error_for` (the one
mapping table), with `x-should-retry` saying whether a retry can help. Anything unexpected is logged with a
correlation id and the client sees only that id; a client hanging up mid-request is routine and logged at DEBUG.
Once a response has started (prepared: its status and headers are on their way, a stream's first events perhaps
too), a failure the handler let escape can no longer be answered: a second response written into its body would be
read as part of it. The connection is closed instead, the body left short of its end (a chunked body without its
last chunk), which every HTTP client reports as a failure, never as a complete answer; streaming surfaces end their
streams with their own terminal events before it comes to that.
Bodies are refused before they are buffered when Content-Length announces more than the surface's limit, and reads
of chunked bodies stop at the limit (after decompression: a small gzip body that inflates past it is a 413 as soon as
it does). A compressed body is inflated by gateway.content_coding, which refuses one cut short (400) or inflating
more than 200-fold past its first MiB (413) as it is read, whichever reader reads it.

NUL: PostgreSQL's text cannot hold it, and its driver's refusal was an internal error wherever a client's string
reached a statement (`previous_response_id`, a `file_search` tool's RAG ids, an MCP tool's `server_label`, a RAG
file's `content_type`, ...). So no string of a request may hold one: not the path (404: it names nothing), nor a
query parameter, nor any string of a JSON body or a form field (400 naming it: `refuse_nul`), except the text a model
reads or writes (`_MODEL_TEXT`).
"""

from __future__ import annotations

import logging
import random
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from multidict import istr
from opentelemetry import trace

from gateway import metrics
from gateway.capture import CAPTURE, POLICIES, finish, tee
from gateway.client_gone import client_gone
from gateway.context import (
    ACCESS,
    CORS,
    LIMIT_HEADERS,
    METER,
    METRICS,
    PAYLOAD,
    PRINCIPAL,
    REQUEST_BYTES,
    REQUEST_ID,
    TRACING,
)
from gateway.event_stream import EventStream
from gateway.limits import LimitExceeded
from gateway.security_events import authenticated, key_refused
from server.auth import bearer_token
from server.capture.exchange import Exchange
from server.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    SwitchboardError,
    Unauthenticated,
    Unavailable,
    UpstreamFailed,
    unavailable,
    wire_error_for,
)
from server.input_bounds import check_json_bounds
from server.nul_text import could_hold_nul, find_nul_in_json

__all__ = [
    "INFERENCE_LIMIT",
    "REQUEST_ID_HEADER",
    "TRANSCRIPTION_LIMIT",
    "MiB",
    "error_payload",
    "middlewares",
    "new_request_id",
    "on_response_prepare",
    "read_body",
    "read_json",
    "refuse_nul",
    "require_model",
    "too_large",
    "undecodable_body",
]

log = logging.getLogger("switchboard.gateway")

MiB = 1024 * 1024
INFERENCE_LIMIT = 32 * MiB
TRANSCRIPTION_LIMIT = 128 * MiB
SERVICE = "gateway"
_PUBLIC = frozenset({"/healthz", "/livez", "/readyz", "/metrics"})  # /metrics checks its own token
REQUEST_ID_HEADER = istr("x-request-id")  # case-folded once, not on every answer
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_tracer = trace.get_tracer("switchboard.gateway")
# The response prepared for a request, set as it is (`on_response_prepare`): from then on nothing else may be sent.
_STARTED = web.RequestKey("started_response", web.StreamResponse)
# The keys whose strings (or arrays of strings) are text a model reads or writes: message and part content, call
# arguments and outputs, instructions, inputs, prompts, search queries and rerank documents. They may hold NUL, as
# any text may: none is an id the gateway looks up, the store keeps them in JSON columns (PostgreSQL's `json`
# type keeps the `\u0000` escape; `jsonb` would refuse it), and a RAG file's text is parsed, where NUL bytes mean a
# binary file. Every other string names something (an id, a label, a URL, a metadata value) and may not hold NUL.
_MODEL_TEXT = frozenset(
    {"content", "text", "refusal", "arguments", "output", "input", "instructions", "prompt", "query", "documents"}
)


def _code(exc: SwitchboardError) -> str | None:
    if isinstance(exc, Unauthenticated):
        return "invalid_api_key"
    if isinstance(exc, NotFound) and exc.field == "model":
        return "model_not_found"
    if isinstance(exc, FailedPrecondition) and exc.field == "model":
        return "model_unresolved"
    if isinstance(exc, QuotaExceeded):
        return "rate_limit_exceeded"
    if isinstance(exc, PayloadTooLarge):
        return "request_too_large"
    return None


def _retryable(exc: SwitchboardError) -> bool:
    return isinstance(exc, QuotaExceeded | Unavailable) or (isinstance(exc, UpstreamFailed) and exc.retryable)


def error_payload(exc: SwitchboardError) -> dict[str, Any]:
    return {
        "error": {
            "message": exc.message,
            "type": wire_error_for(exc).openai_type,
            "param": exc.field,
            "code": _code(exc),
        }
    }


def error_response(exc: SwitchboardError) -> web.Response:
    headers = {"x-should-retry": "true" if _retryable(exc) else "false"}
    if isinstance(exc, LimitExceeded):  # Retry-After, the limits' trios, and whether waiting can help at all
        headers.update(exc.headers)
    return web.Response(
        status=wire_error_for(exc).http_status,
        body=orjson.dumps(error_payload(exc)),
        content_type="application/json",
        headers=headers,
    )


def _internal(request: web.Request) -> web.Response:
    correlation_id = request[REQUEST_ID]
    log.exception("unexpected error in %s %s (correlation id %s)", request.method, request.path, correlation_id)
    body = {
        "error": {
            "message": f"internal error (correlation id {correlation_id})",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    return web.Response(
        status=500, body=orjson.dumps(body), content_type="application/json", headers={"x-should-retry": "false"}
    )


def _http_error(exc: web.HTTPException) -> web.Response:
    status = exc.status
    message = "Unknown request URL." if status == 404 else exc.reason
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers={"x-should-retry": "false"}
    )


async def _authenticate(request: web.Request, app: web.Application) -> None:
    """Authenticate before any body is read: a bad key costs the gateway nothing but a cache lookup."""
    try:
        secret = bearer_token(request.headers)
    except Unauthenticated:
        key_refused(request)
        raise Unauthenticated("You didn't provide an API key. Send it as 'Authorization: Bearer <API key>'.") from None
    try:
        principal = await app[ACCESS].principal(secret)
    except Unauthenticated:
        key_refused(request)  # recorded without the key: a refused secret may be anyone's credential
        raise
    request[PRINCIPAL] = principal
    authenticated(request, principal)


def _sent_bytes(response: web.StreamResponse) -> int:
    if isinstance(response, EventStream):  # counted when the handler returns, before its end is written
        return response.length
    if response.prepared:
        return response.body_length
    if isinstance(response, web.Response) and isinstance(response.body, bytes):
        return len(response.body)
    return 0


@web.middleware
async def gateway_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An allowed origin's CORS preflight is answered before authentication (browsers send preflights without
    credentials; server.cors is the policy). Everything else: authentication, then the handler; errors become OpenAI
    error bodies; every request is counted. One layer, because each middleware layer costs calls on the hot path.
    With tracing on, one span per request."""
    app = request.app  # looked up once: each `request.app` is three Python calls
    if request.method == "OPTIONS":
        answer = app[CORS].preflight(
            request.headers.get("Origin"),
            request.headers.get("Access-Control-Request-Method", ""),
            request.headers.get("Access-Control-Request-Headers"),
        )
        if answer is not None:
            return web.Response(status=204, headers=answer)
    if not app[TRACING]:
        return await _serve(request, handler, app)
    route = request.match_info.route.resource
    template = route.canonical if route is not None else "unmatched"
    with _tracer.start_as_current_span(f"{request.method} {template}", kind=trace.SpanKind.SERVER) as span:
        response = await _serve(request, handler, app)
        span.set_attribute("http.request.method", request.method)
        span.set_attribute("http.route", template)
        span.set_attribute("http.response.status_code", response.status)
        return response


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """Every response, streamed, failed or not, names its request (the SDK's `err.request_id`), says when content
    capture covers it (gateway.capture), carries the rate-limit headers of the limits its call was counted against
    (gateway.limits), and an allowed origin may read it (with CORS on, every answer varies by Origin; a preflight's
    answer already has its own CORS headers); it is remembered as started, so that `_serve` never answers a failure
    after it with a response of its own. One signal receiver for all."""
    request[_STARTED] = response
    request_id = request.get(REQUEST_ID)
    if request_id is None:  # answered before `_serve`: a CORS preflight, aiohttp's 417 for an unknown Expect
        request_id = request[REQUEST_ID] = new_request_id()
    response.headers[REQUEST_ID_HEADER] = request_id
    exchange = request.get(CAPTURE)
    if exchange is not None:  # content capture covers the caller: it is told, and the answer kept
        tee(response, exchange)
    limit_headers = request.get(LIMIT_HEADERS)
    if limit_headers:  # added, not merged: merging rebuilds the whole header table, on every limited call
        response.headers.extend(limit_headers)
    cors = request.app.get(CORS)  # none on the bare app aiohttp answers an unparsable request from
    if cors is None or "Access-Control-Allow-Origin" in response.headers:
        return
    for name, value in cors.response(request.headers.get("Origin")):
        response.headers.add(name, value)


def new_request_id() -> str:
    """A request's id, as its answer's `x-request-id` names it."""
    # Unique, not secret: the process's PRNG (reseeded in each forked worker) costs no system call, unlike secrets.
    return f"req_{random.getrandbits(96):024x}"


async def _serve(request: web.Request, handler: Handler, app: web.Application) -> web.StreamResponse:
    response: web.StreamResponse | None = None
    exchange = None  # content capture's record of this request, when capture covers its caller
    started = time.perf_counter()
    request[REQUEST_ID] = new_request_id()
    abandoned: int | None = None  # the status counted for a response abandoned once started
    try:
        if request.path not in _PUBLIC:
            await _authenticate(request, app)
            exchange = await app[POLICIES].exchange_for(request[PRINCIPAL])
            if exchange is not None:
                request[CAPTURE] = exchange
        _refuse_nul_in_url(request)
        response = await handler(request)
    except Exception as exc:
        response = request.get(_STARTED)
        if response is None:
            response = _answer_failure(request, exc)
        else:
            abandoned = _abandon(request, exc)
    finally:
        _account(request, app, response, exchange, started, abandoned=abandoned)
    return response


def _answer_failure(request: web.Request, exc: Exception) -> web.StreamResponse:
    """The answer to a failure before any response started (re-raised when there is none to give)."""
    if isinstance(exc, SwitchboardError):
        return error_response(exc)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        return _http_error(exc)
    if isinstance(exc, ConnectionResetError):
        if not client_gone(request):
            return _internal(request)
        # routine (a client hanging up mid-upload): aiohttp drops the connection, counted as 499 below
        log.debug("the client went away during %s %s", request.method, request.path)
        raise exc
    return _unexpected(request, exc)


def _abandon(request: web.Request, exc: Exception) -> int:
    """A failure after the response started (see the module docstring): close the connection, so the client sees a
    body cut short; the status to count it as (499 when the client was the one gone). Logged with the correlation id,
    the failure's type and where it was raised: not its text, which may quote what the request or the model sent."""
    status = 500
    if isinstance(exc, ConnectionError) and client_gone(request):
        status = 499
        log.debug("the client went away during %s %s", request.method, request.path)
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        log.error(
            "unexpected %s (at %s) after the response to %s %s had started; connection closed (correlation id %s)",
            type(exc).__name__,
            where,
            request.method,
            request.path,
            request[REQUEST_ID],
        )
    transport = request.transport
    if transport is not None:
        transport.close()  # what was written still goes; then the connection ends, the body unfinished
    return status


def _refuse_nul_in_url(request: web.Request) -> None:
    if "\x00" in request.path:
        raise NotFound("Not found: a path segment holds a NUL character.")
    if "\x00" in request.query_string:  # decoded: `%00`
        name = next((k for k, v in request.query.items() if "\x00" in k or "\x00" in v), "query")
        raise InvalidArgument(f"Query parameter {name!r} may not contain a NUL character.", field=name)


def _unexpected(request: web.Request, exc: Exception) -> web.StreamResponse:
    """A failure no handler expected: the database being unavailable is a retryable refusal, anything else a 500."""
    refusal = unavailable(exc)
    if refusal is None:
        return _internal(request)
    log.warning("%s %s refused: the database is unavailable (%s)", request.method, request.path, type(exc).__name__)
    return error_response(refusal)


def _account(
    request: web.Request,
    app: web.Application,
    response: web.StreamResponse | None,
    exchange: Exchange | None,
    started: float,
    *,
    abandoned: int | None = None,
) -> None:
    """Meter the request's traffic (and its captured exchange), and observe it for /metrics. `abandoned`: the status
    of a response abandoned once started (`_abandon`), whatever status it had begun with."""
    status = response.status if response is not None else 499  # None: cancelled, the client went away
    status = abandoned if abandoned is not None else status
    sent = _sent_bytes(response) if response is not None else 0
    received = request.get(REQUEST_BYTES, request.content_length or 0)
    app[METER].traffic(SERVICE, status, received, sent)
    if exchange is not None:
        finish(request, app[METER], exchange, response)
    if app[METRICS]:
        metrics.observe_request(
            request.method, request.match_info.route.resource, status, time.perf_counter() - started
        )


def middlewares() -> list[Any]:
    return [gateway_middleware]


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"Request body too large: the limit is {limit // MiB} MiB.")


def undecodable_body() -> InvalidArgument:
    """aiohttp's payload error, met by whichever reader of the body (these, or a multipart form's): the body does not
    decode as its Content-Encoding says, or breaks its own framing."""
    return InvalidArgument("We could not decode the request body as its Content-Encoding says.")


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole body, refused with 413 as soon as it is known to exceed `limit`."""
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = await request.content.readany()
        except (HttpProcessingError, RequestPayloadError):  # broken chunked framing (or aiohttp's own inflating)
            raise undecodable_body() from None
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    request[REQUEST_BYTES] = size
    body = b"".join(chunks)
    exchange = request.get(CAPTURE)
    if exchange is not None:
        exchange.request(body)
    return body


async def read_json(request: web.Request, limit: int = INFERENCE_LIMIT) -> dict[str, Any]:
    body = await read_body(request, limit)
    check_json_bounds(body)  # before orjson, which would parse it but could not re-encode it past 255 levels
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise InvalidArgument("We could not parse the JSON body of your request.") from None
    if not isinstance(payload, dict):
        raise InvalidArgument("The request body must be a JSON object.")
    if could_hold_nul(body, json=True):  # JSON spells NUL `\u0000`: most bodies are not walked at all
        refuse_nul(payload)
    request[PAYLOAD] = payload
    return payload


def refuse_nul(fields: dict[str, Any]) -> None:
    """A 400 naming the first field (at any depth) whose string holds NUL, model text aside (see `_MODEL_TEXT`)."""
    path = find_nul_in_json(fields, _MODEL_TEXT)
    if path is not None:
        raise InvalidArgument(f"{path!r} may not contain a NUL character.", field=path)


def require_model(payload: dict[str, Any]) -> str:
    model = payload.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidArgument("you must provide a model parameter", field="model")
    return model
