"""make_app(settings): the gateway's aiohttp application (one per worker process).

cleanup_ctx opens, per process, the Database, the pooled upstream sessions (one per egress Reach, both through the
egress guard), the rate limiter (gateway.limits), the content capture policies (gateway.capture), and the usage
meter (whose flusher writes batches in the background, captured exchanges sealed with their usage, and drains on
shutdown).
Probes: /livez (alias /healthz) answers while the loop does; /readyz while not draining and the database answers
(server.readiness). /metrics serves Prometheus (gateway.metrics, server.metrics).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from gateway import metrics as gateway_metrics
from gateway.access import Access
from gateway.capture import POLICIES as CAPTURE_POLICIES
from gateway.capture import CapturePolicies
from gateway.context import (
    ACCESS,
    CORS,
    DB,
    HTTP,
    LIMITER,
    METER,
    METRICS,
    READINESS,
    SETTINGS,
    TRACING,
    TRANSLATORS,
)
from gateway.limits import open_limiter
from gateway.middleware import TRANSCRIPTION_LIMIT, middlewares, on_response_prepare
from gateway.providers import UpstreamSessions, translators
from gateway.rag import routes as rag_routes
from gateway.responses.mcp_tools import MCP_RUNTIME, McpRuntime
from gateway.security_events import SECURITY_EVENTS, audit_trail, egress_refused
from gateway.surfaces import conversations
from gateway.surfaces.audio import transcriptions
from gateway.surfaces.chat import chat_completions
from gateway.surfaces.embeddings import embeddings
from gateway.surfaces.models import get_model, list_models
from gateway.surfaces.rerank import rerank
from gateway.surfaces.responses import create_response, delete_response, get_response, list_input_items
from server import metrics
from server.audit.export import AuditExport
from server.audit.security import SecurityEventWriter
from server.auth import KeyVerifier
from server.cors import GATEWAY, CorsPolicy, gateway_origins
from server.crypto import SecretBox
from server.egress import EgressGuard
from server.keyauth import ApiKeyVerifier
from server.metering import Meter
from server.readiness import Readiness
from server.settings import Settings
from server.store.db import Database
from server.store.shared_counters import SharedCounters
from server.telemetry import configure_tracing

__all__ = ["make_app"]

log = logging.getLogger("switchboard.gateway")

# How long a checked upstream name lookup is reused for new connections (what aiohttp's DNS cache did before).
_LOOKUP_CACHE_SECONDS = 30.0


def default_key_verifier(settings: Settings, db: Database) -> KeyVerifier:
    """The shared API-key verifier (also the management API's): it caches each lookup for at most
    `settings.api_key_cache_seconds`, the bound on how long a disabled or revoked key keeps working here."""
    return ApiKeyVerifier(db, settings.api_key_cache_seconds)


async def _healthz(request: web.Request) -> web.StreamResponse:
    return web.Response(body=b'{"status":"ok"}', content_type="application/json")


async def _readyz(request: web.Request) -> web.StreamResponse:
    reason = await request.app[READINESS].unready_reason()
    if reason is not None:
        body = orjson.dumps({"status": "unavailable", "reason": reason})
        return web.Response(status=503, body=body, content_type="application/json")
    return web.Response(body=b'{"status":"ready"}', content_type="application/json")


async def _drain(app: web.Application) -> None:
    """Shutdown began (the worker stopped accepting): whatever still asks /readyz hears "draining"."""
    if READINESS in app:
        app[READINESS].drain()


async def _metrics(request: web.Request) -> web.StreamResponse:
    if not metrics.scrape_allowed(request.app[SETTINGS], request.headers.get("Authorization")):
        refusal = {"error": {"message": "/metrics needs the metrics bearer token", "type": "invalid_request_error"}}
        return web.Response(status=401, body=orjson.dumps(refusal), content_type="application/json")
    body = await metrics.exposition(metrics.GATEWAY)
    return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})


def _operations_routes(app: web.Application, settings: Settings) -> None:
    """The probes, and /metrics with recording switched on unless metrics are off."""
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/livez", _healthz)
    app.router.add_get("/readyz", _readyz)
    app[METRICS] = settings.metrics_enabled
    if settings.metrics_enabled:
        gateway_metrics.enable()
        app.router.add_get("/metrics", _metrics)


async def _release(
    app: web.Application, flusher: asyncio.Task[None] | None, audit: tuple[SecurityEventWriter, AuditExport]
) -> None:
    """Close what `make_app`'s resources opened, metering and audit first (they still write to the database)."""
    if flusher is not None:
        flusher.cancel()  # it folds a last time
        await asyncio.gather(flusher, return_exceptions=True)
    for closing in audit:
        await closing.close()
    await app[METER].close()
    await app[LIMITER].close()
    await app[MCP_RUNTIME].close()
    await app[HTTP].close()
    await app[DB].close()


def make_app(
    settings: Settings, *, key_verifier: KeyVerifier | None = None, shared_counters: SharedCounters | None = None
) -> web.Application:
    """The gateway's app; `shared_counters` is the rate-limit table this worker shares with the gateway's other
    workers (gateway.__main__), None for a process counting alone."""
    # Bodies are capped per surface by the handlers (before buffering); this is only the outer bound.
    app = web.Application(middlewares=middlewares(), client_max_size=TRANSCRIPTION_LIMIT + 1024 * 1024)
    app[SETTINGS] = settings
    configure_tracing(settings, "switchboard-gateway")
    app[TRACING] = settings.otel_exporter != "none"
    app[CORS] = CorsPolicy(gateway_origins(settings), GATEWAY)
    app[TRANSLATORS] = translators(settings)

    async def resources(app: web.Application) -> AsyncIterator[None]:
        db = Database.from_settings(settings)
        verifier = key_verifier if key_verifier is not None else default_key_verifier(settings, db)
        events, export = audit_trail(settings, db)
        refused = functools.partial(egress_refused, events)
        guard = EgressGuard.from_settings(settings, db, lookup_cache_seconds=_LOOKUP_CACHE_SECONDS, on_refused=refused)
        # Upstreams may take long to answer (big generations), but never go silent that long; connecting is quick.
        http = UpstreamSessions.open(guard, connect=10, stall=settings.gateway_upstream_stall_seconds, keepalive=60)
        box = SecretBox(settings)  # the platform key, read and derived once: sealing, key hashes, MCP credentials
        # Captured bodies are sealed as the meter writes them.
        meter = Meter(db, settings.metering_journal_path, seal=box.seal_blob)
        if settings.metrics_enabled:
            metrics.watch_pool(db.engine)
        app[DB] = db
        app[READINESS] = Readiness(db)
        app[HTTP] = http
        app[METER] = meter
        app[ACCESS] = Access(db, verifier, box, settings.api_key_cache_seconds)
        app[CAPTURE_POLICIES] = CapturePolicies(
            db, ttl=settings.api_key_cache_seconds, limit=settings.capture_max_body_bytes
        )
        app[LIMITER] = open_limiter(settings, db, shared_counters)
        app[SECURITY_EVENTS] = events
        mcp_guard = EgressGuard.from_settings(settings, db, on_refused=refused)
        app[MCP_RUNTIME] = McpRuntime(mcp_guard, box, settings)
        meter.start()
        events.start()
        export.start()
        db.listen_for_invalidations()  # other processes' changes drop this worker's caches at once
        flusher = asyncio.create_task(metrics.BATCH.flush_every(metrics.FLUSH_SECONDS)) if app[METRICS] else None
        try:
            yield
        finally:
            await _release(app, flusher, (events, export))

    app.cleanup_ctx.append(resources)
    app.on_shutdown.append(_drain)
    app.on_response_prepare.append(on_response_prepare)
    _operations_routes(app, settings)
    _v1_routes(app)
    return app


def _v1_routes(app: web.Application) -> None:
    """The OpenAI-compatible surfaces, conversations and the RAG APIs."""
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model:.+}", get_model)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/responses", create_response)
    app.router.add_get("/v1/responses/{response_id}", get_response)
    app.router.add_delete("/v1/responses/{response_id}", delete_response)
    app.router.add_get("/v1/responses/{response_id}/input_items", list_input_items)
    app.router.add_post("/v1/embeddings", embeddings)
    for path in ("/v1/rerank", "/rerank", "/v2/rerank"):
        app.router.add_post(path, rerank)
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    conversations.routes(app)
    rag_routes(app)
