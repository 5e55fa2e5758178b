"""The audit trail's two interceptors: `AuditInterceptor` opens and closes the call's record around everything
(authentication included, so a refused credential is recorded too); `AuditRequests` tells it which request the
handler got, from which the tenant and the resource's name are read, by field name, only when the event is built."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from contextvars import Token
from typing import Any

from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel
from connectrpc.request import RequestContext
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from server.audit.calls import Call, CallRecorder

__all__ = ["AuditInterceptor", "AuditRequests", "describe_request", "resource_kind"]

Ctx = RequestContext[Any, Any]


def resource_kind(service_name: str) -> str:
    """ "platform.tenants.v1.GroupService" -> "Group"."""
    return service_name.rsplit(".", 1)[-1].removesuffix("Service")


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _string(message: Message, name: str) -> str:
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None or field.type != FieldDescriptor.TYPE_STRING or field.is_repeated:
        return ""
    return str(getattr(message, name))


def _nested(message: Message) -> list[Message]:
    """The request's single message fields that are set (the resource it creates or updates)."""
    found = []
    for field in message.DESCRIPTOR.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated and message.HasField(field.name):
            found.append(getattr(message, field.name))
    return found


def describe_request(request: Message, kind: str) -> tuple[str, str]:
    """(tenant id, resource name or id) as the request names them; only fields named id, name, tenant_id or *_id are
    read, so neither a secret nor model content is ever recorded. The tenant is the request's own `tenant_id`, the
    tenant it acts in: a resource message's `tenant_id` is output only, the client's to write and the server's to
    ignore (the gate on the resource tells the call its real owner: `CallRecorder.acted_on`)."""
    nested = _nested(request)
    tenant_id = _string(request, "tenant_id")
    own_id = f"{_snake(kind)}_id"
    for name in (own_id, "id", "name"):
        if value := _string(request, name):
            return tenant_id, value
    for message in nested:
        for name in ("name", "id"):
            if value := _string(message, name):
                return tenant_id, value
    for field in request.DESCRIPTOR.fields:
        if field.name.endswith("_id") and field.name != "tenant_id" and (value := _string(request, field.name)):
            return tenant_id, value
    return tenant_id, ""


def _code(error: Exception | None) -> str:
    if error is None:
        return ""
    if isinstance(error, ConnectError):
        return str(error.code.value)
    return "unknown"


class AuditInterceptor:
    """First in the chain: every method not marked side-effect free gets exactly one event (see `server.audit.calls`).
    Reads cost one comparison."""

    def __init__(self, recorder: CallRecorder) -> None:
        self._recorder = recorder

    async def on_start(self, ctx: Ctx) -> Token[Call | None] | None:
        if ctx.method.idempotency_level == IdempotencyLevel.NO_SIDE_EFFECTS:
            return None
        method = f"/{ctx.method.service_name}/{ctx.method.name}"
        return self._recorder.begin(method, resource_kind(ctx.method.service_name), ctx.client_address or "")

    async def on_end(self, token: Token[Call | None] | None, ctx: Ctx, error: Exception | None) -> None:
        if token is not None:
            await self._recorder.end(token, _code(error))


class AuditRequests:
    """Behind authentication: hands the parsed request to the call's record (read only if an event is built)."""

    async def intercept_unary(
        self,
        call_next: Callable[[Any, Ctx], Awaitable[Any]],
        request: Any,
        ctx: Ctx,
    ) -> Any:
        if ctx.method.idempotency_level != IdempotencyLevel.NO_SIDE_EFFECTS:
            kind = resource_kind(ctx.method.service_name)
            CallRecorder.described(lambda: describe_request(request, kind))
        return await call_next(request, ctx)
