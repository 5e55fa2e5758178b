"""The interceptor chain, in order: audit → authentication (before the body is read) → error mapping → tracing.

Error mapping is the only place where domain errors become Connect errors (through `server.errors.MAPPING`), and
where unexpected failures are logged with a correlation id that the client also receives, without any detail.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.interceptor import Interceptor
from connectrpc.method import IdempotencyLevel
from connectrpc.request import RequestContext
from connectrpc_otel import OpenTelemetryInterceptor

from server import permissions
from server.audit.calls import CallRecorder
from server.audit.interceptor import AuditInterceptor, AuditRequests
from server.auth import Authenticator
from server.errors import SwitchboardError, unavailable, wire_error_for
from server.services.context import set_principal

__all__ = ["AuthInterceptor", "ErrorInterceptor", "build_interceptors"]

log = logging.getLogger("switchboard.rpc")


class AuthInterceptor:
    """A metadata interceptor at the front of the chain, so a bad credential is refused before parsing the body.

    It is also where what a credential may call at all is decided (`server.permissions.credentials`: API keys are
    refused every method but reads, their conversations and MCP OAuth), so every method, present and future, is
    covered without any handler opting in.
    """

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        try:
            principal = await self._authenticator.authenticate(ctx.request_headers, ctx.http_method)
            CallRecorder.authenticated(principal)  # the audit event names who was refused below, too
            permissions.require_callable(
                principal,
                ctx.method.service_name,
                ctx.method.name,
                side_effect_free=ctx.method.idempotency_level == IdempotencyLevel.NO_SIDE_EFFECTS,
            )
        except SwitchboardError as exc:
            raise ConnectError(wire_error_for(exc).connect_code, exc.message) from None
        except Exception as exc:
            raise _unexpected(exc, ctx) from None
        set_principal(principal)

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None) -> None:
        set_principal(None)


def _internal(ctx: RequestContext[Any, Any]) -> ConnectError:
    correlation_id = secrets.token_hex(8)
    log.exception("unexpected error in %s (correlation id %s)", _method_path(ctx), correlation_id)
    return ConnectError(Code.INTERNAL, f"internal error (correlation id {correlation_id})")


def _unexpected(exc: Exception, ctx: RequestContext[Any, Any]) -> ConnectError:
    """`unavailable` (retryable) when the database is, else internal."""
    refusal = unavailable(exc)
    if refusal is None:
        return _internal(ctx)
    log.warning("%s refused: the database is unavailable (%s)", _method_path(ctx), type(exc).__name__)
    return ConnectError(wire_error_for(refusal).connect_code, refusal.message)


def _method_path(ctx: RequestContext[Any, Any]) -> str:
    return f"/{ctx.method.service_name}/{ctx.method.name}"


def to_connect_error(exc: Exception, ctx: RequestContext[Any, Any]) -> ConnectError:
    if isinstance(exc, SwitchboardError):
        return ConnectError(wire_error_for(exc).connect_code, exc.message)
    if isinstance(exc, ConnectError):
        if exc.code == Code.UNIMPLEMENTED:
            return ConnectError(Code.UNIMPLEMENTED, f"{_method_path(ctx)} is not implemented yet")
        return exc
    return _unexpected(exc, ctx)


class ErrorInterceptor:
    async def intercept_unary(
        self,
        call_next: Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]],
        request: Any,
        ctx: RequestContext[Any, Any],
    ) -> Any:
        try:
            return await call_next(request, ctx)
        except Exception as exc:
            raise to_connect_error(exc, ctx) from None


def build_interceptors(authenticator: Authenticator, audit: CallRecorder, *, tracing: bool) -> list[Interceptor]:
    """`tracing`: add the span-per-RPC interceptor (off when no exporter is configured: its propagation and no-op
    spans were a tenth of a short read's CPU). The audit trail's interceptor comes first so that it sees a refused
    credential too (`server.audit.calls`)."""
    chain: list[Interceptor] = [
        AuditInterceptor(audit),
        AuthInterceptor(authenticator),
        AuditRequests(),
        ErrorInterceptor(),
    ]
    if tracing:
        chain.append(OpenTelemetryInterceptor())
    return chain
