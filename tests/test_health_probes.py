"""Liveness and readiness on both servers: /livez answers while the process does; /readyz (and gRPC health) says
"not ready" while the database is gone or the replica drains, and "ready" again once the database is back; gRPC
health knows which services the server serves. Also /metrics' optional bearer token, and metrics switched off."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.app import make_app
from gateway.context import READINESS
from gen.grpc.health.v1.health_pb2 import HealthCheckRequest, HealthCheckResponse
from gen.grpc.health.v1.health_pb2_grpc import HealthStub
from server.settings import load_settings
from server.store.migrate import upgrade
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, PG_ADMIN_URL, Database, Server, server_env, start_server
from tests.metrics_scrape import scrape
from tests.pg_urls import sqlalchemy_url

TOKEN = "metrics-scrape-" + secrets.token_hex(8)


def _admin() -> Any:
    import psycopg

    return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)


@pytest.fixture
def doomed_database() -> Iterator[tuple[str, str]]:
    """(name, url) of a PostgreSQL database of this test's own, which the test drops and creates again."""
    try:
        _admin().close()
    except Exception as exc:
        pytest.skip(f"PostgreSQL unreachable ({type(exc).__name__})")
    name = f"sb_health_{secrets.token_hex(6)}"
    url = sqlalchemy_url(PG_ADMIN_URL, name)
    try:
        _create(name, url)
        yield name, url
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _drop(name: str) -> None:
    with _admin() as conn:  # WITH (FORCE) also ends the servers' pooled connections
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _create(name: str, url: str) -> None:
    """The database, migrated: the servers' usage meters write to it as they stop."""
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    upgrade(url)


async def _get(url: str, **headers: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
        return resp.status, await resp.text()


@pytest_asyncio.fixture
async def gateway_app(doomed_database: tuple[str, str]) -> AsyncIterator[tuple[str, web.Application]]:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-health-"))
    env = {
        "SWITCHBOARD_DATABASE_URL": doomed_database[1],
        "SWITCHBOARD_VAR_DIR": str(var_dir),
        "SWITCHBOARD_METRICS_TOKEN": TOKEN,
    }
    app = make_app(load_settings(env))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/"), app
    finally:
        await server.close()


async def test_gateway_ready_follows_the_database_and_draining(
    doomed_database: tuple[str, str], gateway_app: tuple[str, web.Application]
) -> None:
    base, app = gateway_app
    name, url = doomed_database
    assert (await _get(f"{base}/livez"))[0] == 200
    assert (await _get(f"{base}/readyz"))[0] == 200
    _drop(name)
    status, body = await _get(f"{base}/readyz")
    assert status == 503 and "database unreachable" in body
    assert name not in body  # fixed words, never the driver's message
    assert (await _get(f"{base}/livez"))[0] == 200  # alive: restarting it would not bring the database back
    assert (await _get(f"{base}/healthz"))[0] == 200
    _create(name, url)
    assert (await _get(f"{base}/readyz"))[0] == 200  # reconnects by itself
    app[READINESS].drain()
    status, body = await _get(f"{base}/readyz")
    assert status == 503 and "draining" in body
    assert (await _get(f"{base}/livez"))[0] == 200


async def test_gateway_metrics_token(gateway_app: tuple[str, web.Application]) -> None:
    base, _ = gateway_app
    assert (await _get(f"{base}/metrics"))[0] == 401
    assert (await _get(f"{base}/metrics", Authorization="Bearer wrong"))[0] == 401
    assert (await _get(f"{base}/metrics", Authorization=f"Basic {TOKEN}"))[0] == 401
    seen = await scrape(base, TOKEN)
    assert "switchboard_gateway_request_duration_seconds" in seen.text
    assert TOKEN not in seen.text


async def test_gateway_metrics_off_and_shutdown_drains(doomed_database: tuple[str, str]) -> None:
    env = {
        "SWITCHBOARD_DATABASE_URL": doomed_database[1],
        "SWITCHBOARD_VAR_DIR": tempfile.mkdtemp(prefix="switchboard-nometrics-"),
        "SWITCHBOARD_METRICS_ENABLED": "false",
    }
    app = make_app(load_settings(env))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        assert (await _get(str(server.make_url("/metrics"))))[0] == 404
        assert (await _get(str(server.make_url("/livez"))))[0] == 200
        assert not app[READINESS].draining
    finally:
        await server.close()
    assert app[READINESS].draining  # shutting down drains


async def test_management_ready_follows_the_database(doomed_database: tuple[str, str]) -> None:
    name, url = doomed_database
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-health-mgmt-"))
    env = server_env(Database("postgresql", url), var_dir, SWITCHBOARD_METRICS_TOKEN=TOKEN)
    proc = await start_server(env)
    base = f"http://127.0.0.1:{proc.listener_port}"
    health = ConnectJsonCaller(base)
    try:
        assert (await _get(f"{base}/metrics"))[0] == 401
        assert "switchboard_management_request_duration_seconds" in (await scrape(base, TOKEN)).text
        checked = await health.call("grpc.health.v1.Health/Check", {})
        assert checked.ok and checked.body["status"] == "SERVING"
        _drop(name)
        status, body = await _get(f"{base}/readyz")
        assert status == 503 and "database unreachable" in body and name not in body
        assert (await _get(f"{base}/livez"))[0] == 200
        for _ in range(30):  # gRPC health caches its answer for up to a second (bounded wait, not a timing check)
            checked = await health.call("grpc.health.v1.Health/Check", {})
            if checked.body.get("status") == "NOT_SERVING":
                break
            await asyncio.sleep(0.1)
        assert checked.ok and checked.body["status"] == "NOT_SERVING"
        _create(name, url)
        assert (await _get(f"{base}/readyz"))[0] == 200
    finally:
        await proc.stop()


@ONE_BACKEND
async def test_grpc_health_check_of_an_unknown_service_is_not_found(server: Server) -> None:
    """The gRPC health protocol: "" is the whole server, a served service has its status, and an unknown one is
    NOT_FOUND, so a probe configured with a mistyped service name fails instead of reporting healthy."""
    health = ConnectJsonCaller(server.base_url)
    assert (await health.call("grpc.health.v1.Health/Check", {})).body.get("status") == "SERVING"
    served = await health.call("grpc.health.v1.Health/Check", {"service": "platform.tenants.v1.TenantService"})
    assert served.body.get("status") == "SERVING", served
    checked = await health.call("grpc.health.v1.Health/Check", {"service": "no.such.v1.Service"})
    assert checked.code == "not_found", checked


@ONE_BACKEND
async def test_grpc_health_watch_of_an_unknown_service_says_service_unknown(server: Server) -> None:
    """Watch of an unknown service answers SERVICE_UNKNOWN and keeps the call open (the protocol), not SERVING."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        watch = HealthStub(channel).Watch(HealthCheckRequest(service="no.such.v1.Service"), timeout=10)
        first = await watch.read()
        watch.cancel()
    assert first.status == HealthCheckResponse.ServingStatus.SERVICE_UNKNOWN
