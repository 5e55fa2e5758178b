"""The gateway's Prometheus metrics (see server.metrics for the registry, the exposition and multiprocess mode).

Recording is switched on per process by `enable()` (make_app does, unless SWITCHBOARD_METRICS_ENABLED is off); off,
every recorder returns at once. Each recorder keeps the labelled children it records into, keyed by its bounded
label values, so the hot path pays a dict lookup rather than prometheus-client's labels(), and records through
`server.metrics.BATCH` (folded into the multiprocess files once a second by each worker, see make_app).

Label values: `route` is the matched route's template (`/v1/responses/{response_id}`, never the raw path; "unmatched"
for a 404), `method` one of the HTTP methods below (else "other"), `status` the HTTP status, `model` the registered
model id the request resolved to (never what the client typed: an unresolved call has no upstream to time).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from server import metrics
from server.metrics import BATCH, GATEWAY

__all__ = [
    "connection_refused",
    "enable",
    "enabled",
    "observe_first_token",
    "observe_request",
    "observe_tokens",
    "observe_tool_call",
    "observe_upstream",
    "rag_backlog",
    "rag_ingested",
]

# Inference answers take from milliseconds to minutes: the default buckets stop at 10 s.
_LONG = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"})

_REQUESTS = Histogram(
    "switchboard_gateway_request_duration_seconds",
    "Gateway requests by HTTP method, route template and status, until the response ended (whole streams "
    "included). Its _count is the request count.",
    ["method", "route", "status"],
    buckets=_LONG,
    registry=GATEWAY,
)
_UPSTREAM = Histogram(
    "switchboard_gateway_upstream_latency_seconds",
    "Time from sending a request to a model upstream until its response headers arrived, per model.",
    ["model"],
    buckets=_LONG,
    registry=GATEWAY,
)
_FIRST_TOKEN = Histogram(
    "switchboard_gateway_time_to_first_token_seconds",
    "Streamed calls: time from the request's arrival until the upstream's first streamed bytes, per model.",
    ["model"],
    buckets=_LONG,
    registry=GATEWAY,
)
_TOKENS = Counter(
    "switchboard_gateway_tokens",
    "Tokens metered per model and kind (prompt, completion, embedding, rerank).",
    ["model", "kind"],
    registry=GATEWAY,
)
_TOOL_CALLS = Counter(
    "switchboard_gateway_tool_calls",
    "MCP tool calls made by the Responses tool loop, by outcome (ok, tool_error: the tool reported an error, "
    "failed: unreachable or timed out).",
    ["outcome"],
    registry=GATEWAY,
)
_RAG_BACKLOG = Gauge(
    "switchboard_rag_ingest_backlog_files",
    "RAG files queued or being embedded in the background.",
    ["stage"],
    registry=GATEWAY,
    multiprocess_mode="livesum",
)
_RAG_FILES = Counter(
    "switchboard_rag_ingested_files",
    "RAG files whose ingestion ended, by mode (inline, background) and outcome (ready, failed).",
    ["mode", "outcome"],
    registry=GATEWAY,
)
_RAG_CHUNKS = Counter(
    "switchboard_rag_ingested_chunks",
    "Chunks embedded and stored, by mode (inline, background).",
    ["mode"],
    registry=GATEWAY,
)
_CONNECTIONS_REFUSED = Counter(
    "switchboard_gateway_connections_refused",
    "Client connections a gateway worker closed unanswered, by reason (max_connections: it held "
    "SWITCHBOARD_MAX_CONNECTIONS open already).",
    ["reason"],  # labelled like every metric here: a child's value is made after the multiprocess switch
    registry=GATEWAY,
)
_TOKEN_KINDS = ("prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens")

_observe = BATCH.observe
_add = BATCH.add
_on = False
_requests: dict[tuple[str, web.AbstractResource | None, int], Any] = {}
_upstream: dict[str, Any] = {}
_first_token: dict[str, Any] = {}
_tokens: dict[str, dict[str, Any]] = {}  # model -> token kind -> child


def enable() -> None:
    global _on  # noqa: PLW0603 - one switch per process, like the registry itself
    _on = True
    metrics.enable()


def enabled() -> bool:
    return _on


def observe_request(method: str, resource: web.AbstractResource | None, status: int, seconds: float) -> None:
    key = (method, resource, status)
    child = _requests.get(key)
    if child is None:
        route = resource.canonical if resource is not None else "unmatched"
        child = _REQUESTS.labels(method if method in _METHODS else "other", route, str(status))
        _requests[key] = child
    _observe(child, seconds)


def observe_upstream(model: str, seconds: float) -> None:
    if _on:
        child = _upstream.get(model)
        if child is None:
            child = _upstream[model] = _UPSTREAM.labels(model)
        _observe(child, seconds)


def observe_first_token(model: str, seconds: float) -> None:
    if _on:
        child = _first_token.get(model)
        if child is None:
            child = _first_token[model] = _FIRST_TOKEN.labels(model)
        _observe(child, seconds)


def observe_tokens(model: str, tokens: dict[str, int]) -> None:
    """`tokens` as gateway.calls.Call keeps them (`prompt_tokens`, ..., `total_tokens`, which is not recorded)."""
    if not _on:
        return
    children = _tokens.get(model)
    if children is None:
        children = _tokens[model] = {kind: _TOKENS.labels(model, kind.removesuffix("_tokens")) for kind in _TOKEN_KINDS}
    for kind, count in tokens.items():
        child = children.get(kind)
        if child is not None and count:
            _add(child, count)


def observe_tool_call(status: int) -> None:
    if _on:
        _add(_TOOL_CALLS.labels("ok" if status < 400 else "tool_error" if status == 422 else "failed"))


def rag_backlog(change: int) -> None:
    """+n when background files are queued, -n when their job ends."""
    if _on:
        _add(_RAG_BACKLOG.labels("background"), change)


def rag_ingested(mode: str, files: int, chunks: int, *, ok: bool) -> None:
    if _on:
        _add(_RAG_FILES.labels(mode, "ready" if ok else "failed"), files)
        if ok and chunks:
            _add(_RAG_CHUNKS.labels(mode), chunks)


def connection_refused() -> None:
    if _on:
        _add(_CONNECTIONS_REFUSED.labels("max_connections"))
