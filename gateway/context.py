"""Typed keys for what the app holds per process and what a request carries between middleware and handlers."""

from __future__ import annotations

from aiohttp import web

from gateway.access import Access
from gateway.catalog import Provider
from gateway.limits import Limiter
from gateway.providers import Translator, UpstreamSessions
from server.cors import CorsPolicy
from server.domain.principal import Principal
from server.metering import Meter
from server.readiness import Readiness
from server.settings import Settings
from server.store.db import Database

__all__ = [
    "ACCESS",
    "CORS",
    "DB",
    "HTTP",
    "LIMITER",
    "LIMIT_HEADERS",
    "METER",
    "METRICS",
    "PAYLOAD",
    "PRINCIPAL",
    "READINESS",
    "REQUEST_BYTES",
    "REQUEST_ID",
    "SETTINGS",
    "TRACING",
    "TRANSLATORS",
]

SETTINGS = web.AppKey("settings", Settings)
DB = web.AppKey("db", Database)
HTTP = web.AppKey("http", UpstreamSessions)
METER = web.AppKey("meter", Meter)
ACCESS = web.AppKey("access", Access)
TRANSLATORS = web.AppKey("translators", dict[Provider, Translator])
CORS = web.AppKey("cors", CorsPolicy)
LIMITER = web.AppKey("limiter", Limiter)
READINESS = web.AppKey("readiness", Readiness)  # /readyz; drain() on shutdown
METRICS = web.AppKey("metrics", bool)  # record Prometheus metrics (gateway.metrics)
TRACING = web.AppKey("tracing", bool)  # spans carry methods, routes, statuses, model ids and counts; never content

PRINCIPAL = web.RequestKey("principal", Principal)
REQUEST_BYTES = web.RequestKey("request_bytes", int)
REQUEST_ID = web.RequestKey("request_id", str)  # sent as x-request-id; names the request in our logs
PAYLOAD = web.RequestKey("payload", dict)  # the parsed JSON body, for what a call reserves against token limits
LIMIT_HEADERS = web.RequestKey("limit_headers", dict)  # an admitted call's rate-limit headers, for its answer
