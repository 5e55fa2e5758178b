"""build_app(settings): one ASGI app serving every service over Connect, gRPC and gRPC-Web on one port.

Every service generated under `gen.platform` (the spec's packages) and `gen.switchboard` (our own additions) is
mounted at its `.path`. A service with a handler registered in
`server.services.HANDLERS` is served by it; any other answers `unimplemented` naming the method, so no method of
the contract is ever missing from the router. gRPC health checking and server reflection are mounted beside them,
`/console` serves the web console (server.console), `/livez` (alias `/healthz`: the process answers) and `/readyz`
(not draining, database reachable; see server.readiness) suit Kubernetes probes, and `/metrics` serves Prometheus
(server.metrics).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import pkgutil
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import quote

from connectrpc_grpcreflect import (
    ServerReflectionAlphaASGIApplication,
    ServerReflectionAlphaService,
    ServerReflectionASGIApplication,
    ServerReflectionService,
)
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor, ServiceDescriptor
from protobuf import DescService
from protobuf.wkt import FileDescriptorSet

import gen.platform
import gen.switchboard
from server import metrics
from server.auth import Authenticator
from server.codecs import management_codecs, management_compressions, reflection_codecs
from server.connect_errors import connect_error_bodies, error_body
from server.console.oidc import OidcClient
from server.console.session import AUTH_PREFIX, ConsoleAuth, session_cookie_name, sign_in_options
from server.console.static import PREFIX as CONSOLE_PREFIX
from server.console.static import ConsoleStatic, console_directory
from server.cors import MANAGEMENT, CorsASGI, CorsPolicy
from server.domain.groups import group_lists_info
from server.heap import freeze_startup_heap
from server.input_bounds import MANAGEMENT_MESSAGE_LIMIT
from server.interceptors import build_interceptors
from server.logs import configure_logging
from server.permissions import follow_membership_changes, memberships_info
from server.readiness import Readiness
from server.services import HANDLERS, Deps
from server.services.health import HealthHandler
from server.session_revocations import SessionRevocations
from server.settings import Settings
from server.store.db import Database
from server.telemetry import configure_tracing, tracing_enabled
from server.tokens import TokenVerifier
from server.traffic import TrafficCounter

__all__ = ["ServiceApp", "build_app", "generated_services", "quiet_client_gone", "reflection_descriptors"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("switchboard.server")


@dataclass(frozen=True)
class ServiceApp:
    """One generated service: its full name, its Protocol, its ASGI application class and its descriptor."""

    full_name: str
    protocol: Any
    asgi_app: Any
    module: ModuleType
    descriptor: ServiceDescriptor


def _connect_modules() -> Iterator[ModuleType]:
    for package in (gen.platform, gen.switchboard):
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if info.name.endswith("_connect"):
                yield importlib.import_module(info.name)


def generated_services() -> list[ServiceApp]:
    """Every service of the contract, found in the generated code (so a new .proto needs no router edit)."""
    found = []
    for module in _connect_modules():
        # A snapshot: a finalizer that warns while desc() runs adds __warningregistry__ to the module's dict.
        for attr, value in list(vars(module).items()):
            if not attr.endswith("ASGIApplication") or getattr(value, "__module__", None) != module.__name__:
                continue
            protocol = getattr(module, attr.removesuffix("ASGIApplication"))
            messages = importlib.import_module(module.__name__.removesuffix("_connect") + "_pb2")
            descriptor = messages.DESCRIPTOR.services_by_name[protocol.__name__]
            found.append(ServiceApp(descriptor.full_name, protocol, value, module, descriptor))
    return sorted(found, key=lambda s: s.full_name)


def reflection_descriptors(services: list[ServiceDescriptor]) -> list[DescService]:
    """The services as connectrpc-grpcreflect reads them (protobuf-py descriptors), built from the same files the
    Google runtime loaded, dependencies first."""
    ordered: list[FileDescriptor] = []

    def visit(file: FileDescriptor) -> None:
        if file in ordered:
            return
        for dependency in file.dependencies:
            visit(dependency)
        ordered.append(file)

    for service in services:
        visit(service.file)
    files = descriptor_pb2.FileDescriptorSet()
    for file in ordered:
        file.CopyToProto(files.file.add())
    registry = FileDescriptorSet.from_binary(files.SerializeToString()).to_registry()
    found = [registry.service(service.full_name) for service in services]
    return [d for d in found if d is not None]


def _unimplemented(protocol: type) -> object:
    # The generated Protocol's methods raise UNIMPLEMENTED; the error interceptor names the method.
    return type(f"Unimplemented{protocol.__name__}", (protocol,), {})()


def _unary_receive(receive: Receive) -> Receive:
    """receive() for a unary call: the body as sent, then wait instead of asking pyvoy again (see below)."""
    body_done = False

    async def wrapped() -> MutableMapping[str, Any]:
        nonlocal body_done
        if body_done:
            await asyncio.Event().wait()
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_done = True
        return message

    return wrapped


def _bodyless_receive() -> Receive:
    """receive() for a request without a body (Connect GET, empty POST): one empty body, then wait.

    connectrpc watches receive() for a disconnect while a unary handler runs; under pyvoy 1.3 that receive() fails
    ("invalid state") when the request ended with its headers, and the request hangs. A unary call without a body
    loses nothing by not watching for disconnects.
    """
    delivered = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _undecodable_header(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The name of the first header that is not UTF-8 (connectrpc would fail decoding it with a 500)."""
    for name, value in headers:
        try:
            name.decode()
            value.decode()
        except UnicodeDecodeError:
            return name.decode("latin-1")
    return None


async def _refuse(scope: Scope, send: Send, message: str) -> None:
    """An invalid_argument answer before connectrpc sees the request, in the request's protocol."""
    content_type = dict(scope["headers"]).get(b"content-type", b"")
    if content_type.startswith(b"application/grpc"):  # gRPC and gRPC-Web: a trailers-only response
        headers = [
            (b"content-type", content_type.split(b";")[0]),
            (b"grpc-status", b"3"),
            (b"grpc-message", quote(message).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    await _json(send, 400, {"code": "invalid_argument", "message": message})


def quiet_client_gone(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: a client that gave up early (a cancelled gRPC call, a passed deadline)
    makes pyvoy complete a receive future that connectrpc already cancelled, and asyncio would log that
    InvalidStateError with a traceback that looks like a crash. It is routine: DEBUG, no traceback. Anything else
    goes to asyncio's default handler."""
    if isinstance(context.get("exception"), asyncio.InvalidStateError) and "handle" in context:
        log.debug("a client went away before its request finished (its stream was reset)")
        return
    loop.default_exception_handler(context)


def _never_stored(send: Send) -> Send:
    """`send`, with `Cache-Control: no-store` on the answer: for a Connect GET without an Authorization header (the
    console's, whose session rides in a cookie). Its answer is its caller's own while its URL is anyone's (the
    console's GetSession is `message={}`), and a cookie, unlike an Authorization header, does not keep a shared cache
    from storing the answer and handing it to the next person."""

    async def wrapped(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (b"cache-control", b"no-store")]}
        await send(message)

    return wrapped


class Router:
    def __init__(self, deps: Deps, apps: dict[str, ASGIApp], streaming: set[str], readiness: Readiness) -> None:
        self._deps = deps
        self._apps = apps
        self._streaming = streaming  # paths of streaming methods, which keep watching for disconnects
        self.readiness = readiness
        self._mounts: list[tuple[str, ASGIApp]] = []  # (path prefix, app), longest prefix first

    def mount(self, prefix: str, app: ASGIApp) -> None:
        """Serve every path starting with `prefix` (one that names no service) by `app`."""
        self._mounts.append((prefix, app))
        self._mounts.sort(key=lambda mounted: -len(mounted[0]))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        app = self._apps.get(path.rsplit("/", 1)[0])
        if app is not None:
            undecodable = _undecodable_header(scope["headers"])
            if undecodable is not None:
                await _refuse(scope, send, f"the {undecodable} header is not valid UTF-8")
                return
            if scope["method"] == "GET" and not any(name == b"authorization" for name, _ in scope["headers"]):
                send = _never_stored(send)
            if scope["method"] == "GET" or (b"content-length", b"0") in scope["headers"]:
                receive = _bodyless_receive()
            elif path not in self._streaming:
                receive = _unary_receive(receive)
            await app(scope, receive, connect_error_bodies(scope, send))
        elif path in ("/livez", "/healthz"):
            await _json(send, 200, {"status": "ok"})
        elif path == "/readyz":
            await self._ready(send)
        elif path == "/metrics" and self._deps.settings.metrics_enabled:
            await self._metrics(scope, send)
        elif mounted := next((a for prefix, a in self._mounts if path.startswith(prefix)), None):
            await mounted(scope, receive, send)
        else:
            # An unknown procedure: Connect's code for it (a bare 404 is read as unimplemented too).
            body = error_body("unimplemented", f"no service at {path[:100]}")
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    async def _ready(self, send: Send) -> None:
        reason = await self.readiness.unready_reason()
        if reason is not None:
            await _json(send, 503, {"status": "unavailable", "reason": reason})
            return
        await _json(send, 200, {"status": "ready"})

    async def _metrics(self, scope: Scope, send: Send) -> None:
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        if not metrics.scrape_allowed(self._deps.settings, authorization):
            await _json(send, 401, {"code": "unauthenticated", "message": "/metrics needs the metrics bearer token"})
            return
        await metrics.read_envoy_counters(self._deps.settings.management_admin_file)
        body = await metrics.exposition(metrics.MANAGEMENT)
        headers = [(b"content-type", metrics.CONTENT_TYPE.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                asyncio.get_running_loop().set_exception_handler(quiet_client_gone)
                freeze_startup_heap()
                self._deps.db.listen_for_invalidations()  # other replicas' changes drop this one's caches at once
                self._deps.start_background()  # audit retention and export
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.readiness.drain()  # whatever still asks /readyz from now on hears "draining"
                await self._deps.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _mount_console_auth(router: Router, deps: Deps, tokens: TokenVerifier, revocations: SessionRevocations) -> None:
    """The console's sign-in and sign-out at /console/auth/ (server.console.session), checking and revoking sessions
    with the API's own TokenVerifier and SessionRevocations."""
    settings = deps.settings
    oidc = None
    if settings.oidc_issuer:
        oidc = OidcClient(settings, deps.secret_box(), deps.identity_http, revocations.spend)
    router.mount(AUTH_PREFIX, ConsoleAuth(settings, tokens, oidc, revocations))


def console_app(settings: Settings) -> ASGIApp:
    """The web console's files and config.json under /console (server.console.static)."""
    config = {"gatewayUrl": settings.gateway_public_url, **sign_in_options(settings)}
    return ConsoleStatic(console_directory(settings), config, settings.gateway_public_url)


def build_app(settings: Settings, *, deps: Deps | None = None) -> TrafficCounter:
    configure_logging(settings.log_level)
    configure_tracing(settings, "switchboard-management")
    if settings.metrics_enabled:
        metrics.enable()  # before the caches below are made: they bind their counters then
    if deps is None:
        # Tenant roles are cached for the same bound as API keys (see server.permissions.tenancy).
        info = {**memberships_info(settings.api_key_cache_seconds), **group_lists_info()}
        db = Database.from_settings(settings, session_info=info)
        follow_membership_changes(db.invalidations, info)
        deps = Deps(settings=settings, db=db)
    tokens = TokenVerifier(settings, deps.identity_http if settings.jwks_url else None)
    revocations = SessionRevocations(deps.db, settings.api_key_cache_seconds)
    authenticator = Authenticator(
        deps.db, tokens, revocations, deps.key_verifier(), session_cookie_name=session_cookie_name(deps.settings)
    )
    interceptors = build_interceptors(authenticator, deps.audit_recorder(), tracing=tracing_enabled())
    apps: dict[str, ASGIApp] = {}
    descriptors: list[ServiceDescriptor] = []
    # Every service, health and reflection included, decodes through the bounded codecs (server.codecs).
    bounds: dict[str, Any] = {
        "codecs": management_codecs(),
        "compressions": management_compressions(),
        "read_max_bytes": MANAGEMENT_MESSAGE_LIMIT,
    }
    for service in generated_services():
        factory = HANDLERS.get(service.full_name)
        handler = factory(deps) if factory is not None else _unimplemented(service.protocol)
        app = service.asgi_app(handler, interceptors=interceptors, **bounds)
        apps[app.path] = app
        descriptors.append(service.descriptor)
    readiness = Readiness(deps.db, marker=settings.management_drain_marker)
    health = HealthHandler(readiness)
    for app in health.apps(**bounds):
        apps[app.path] = app
    reflected = reflection_descriptors([*descriptors, *health.descriptors()])
    reflection_bounds = {**bounds, "codecs": reflection_codecs()}
    for app in (
        ServerReflectionASGIApplication(ServerReflectionService(*reflected), **reflection_bounds),
        ServerReflectionAlphaASGIApplication(ServerReflectionAlphaService(*reflected), **reflection_bounds),
    ):
        apps[app.path] = app
    streaming = {
        f"/{service.full_name}/{method.name}"
        for service in (*descriptors, *health.descriptors())
        for method in service.methods
        if method.client_streaming or method.server_streaming
    }
    inner = Router(deps, apps, streaming, readiness)
    inner.mount(CONSOLE_PREFIX, console_app(settings))  # after /console/auth/ by length: sign-in wins
    _mount_console_auth(inner, deps, tokens, revocations)
    router = CorsASGI(inner, CorsPolicy(settings.cors_allowed_origins, MANAGEMENT))
    observe = None
    if settings.metrics_enabled:
        metrics.watch_pool(deps.db.engine)
        contract = frozenset(
            f"/{service.full_name}/{method.name}"
            for service in (*descriptors, *health.descriptors())
            for method in service.methods
        )
        observe = metrics.rpc_observer(contract)
    return TrafficCounter(router, deps.meter(), observe=observe)
