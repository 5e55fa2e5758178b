"""make_app(settings): the gateway's aiohttp application (one per worker process).

cleanup_ctx opens, per process, the Database, the pooled upstream sessions (one per egress Reach, both through the
egress guard), and the usage meter (whose flusher writes batches in the background and drains on shutdown).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator

import orjson
from aiohttp import web
from sqlalchemy import text

from gateway.access import Access
from gateway.context import ACCESS, CORS, DB, HTTP, METER, SETTINGS, TRACING, TRANSLATORS
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
from server.auth import KeyVerifier
from server.cors import GATEWAY, CorsPolicy
from server.crypto import SecretBox
from server.egress import EgressGuard
from server.keyauth import ApiKeyVerifier
from server.metering import Meter
from server.settings import Settings
from server.store.db import Database
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
    try:
        async with request.app[DB].read() as session:
            await session.execute(text("SELECT 1"))
    except Exception:
        log.exception("readiness check failed")
        return web.Response(status=503, body=orjson.dumps({"status": "unavailable"}), content_type="application/json")
    return web.Response(body=b'{"status":"ready"}', content_type="application/json")


def make_app(settings: Settings, *, key_verifier: KeyVerifier | None = None) -> web.Application:
    # Bodies are capped per surface by the handlers (before buffering); this is only the outer bound.
    app = web.Application(middlewares=middlewares(), client_max_size=TRANSCRIPTION_LIMIT + 1024 * 1024)
    app[SETTINGS] = settings
    configure_tracing(settings)
    app[TRACING] = settings.otel_exporter != "none"
    app[CORS] = CorsPolicy(settings.cors_allowed_origins, GATEWAY)
    app[TRANSLATORS] = translators(settings)

    async def resources(app: web.Application) -> AsyncIterator[None]:
        db = Database(settings.database_url)
        verifier = key_verifier if key_verifier is not None else default_key_verifier(settings, db)
        events, export = audit_trail(settings, db)
        refused = functools.partial(egress_refused, events)
        guard = EgressGuard.from_settings(settings, db, lookup_cache_seconds=_LOOKUP_CACHE_SECONDS, on_refused=refused)
        # Upstreams may take long to answer (big generations), but never go silent that long; connecting is quick.
        http = UpstreamSessions.open(guard, connect=10, stall=settings.gateway_upstream_stall_seconds, keepalive=60)
        meter = Meter(db)
        app[DB] = db
        app[HTTP] = http
        app[METER] = meter
        app[ACCESS] = Access(db, verifier, SecretBox(settings), settings.api_key_cache_seconds)
        app[SECURITY_EVENTS] = events
        mcp_guard = EgressGuard.from_settings(settings, db, on_refused=refused)
        app[MCP_RUNTIME] = McpRuntime(mcp_guard, SecretBox(settings), settings)
        meter.start()
        events.start()
        export.start()
        try:
            yield
        finally:
            await events.close()
            await export.close()
            await meter.close()
            await app[MCP_RUNTIME].close()
            await http.close()
            await db.close()

    app.cleanup_ctx.append(resources)
    app.on_response_prepare.append(on_response_prepare)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
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
    return app
