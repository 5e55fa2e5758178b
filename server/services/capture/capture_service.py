"""/switchboard.capture.v1.CaptureService/* — rules in server.capture, gates in server.permissions.capture.

Bodies are answered, never logged."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.switchboard.capture.v1 import capture_pb2 as cpb
from gen.switchboard.capture.v1 import capture_service_pb2 as pb
from gen.switchboard.capture.v1.capture_service_connect import CaptureService
from server import permissions
from server.audit.calls import CallRecorder
from server.capture import policies
from server.capture.exchange import ScopeKind
from server.capture.store import ExchangeFilter, list_exchanges, open_exchange
from server.errors import InvalidArgument
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants.convert import enum, time_field, timestamp
from server.store.models import CapturedExchangeRow

__all__ = ["CaptureServiceHandler"]

Ctx = RequestContext[Any, Any]
_SCOPE_NAMES = {ScopeKind.TENANT: "tenant", ScopeKind.SERVICE_ACCOUNT: "service_account", ScopeKind.API_KEY: "api_key"}


def _policy(value: policies.Policy) -> cpb.CapturePolicy:
    return cpb.CapturePolicy(
        tenant_id=value.tenant_id,
        scope=cpb.CaptureScope(kind=enum(cpb.CaptureScopeKind, value.scope.kind), id=value.scope.id),
        enabled=value.enabled,
        update_time=timestamp(value.updated_at) if value.updated_at is not None else None,
        updated_by=value.updated_by,
    )


def _grant(value: policies.Grant) -> cpb.CaptureGrant:
    return cpb.CaptureGrant(
        tenant_id=value.tenant_id,
        user_id=value.user_id,
        grant_time=timestamp(value.granted_at),
        granted_by=value.granted_by,
    )


def _exchange(row: CapturedExchangeRow) -> cpb.CapturedExchange:
    return cpb.CapturedExchange(
        id=row.id,
        time=timestamp(row.occurred_at),
        tenant_id=row.tenant_id,
        api_key_id=row.api_key_id,
        service_account_id=row.service_account_id,
        user_id=row.user_id,
        model=row.model_id,
        call_kind=row.call_kind,  # type: ignore[arg-type]
        status=row.status,
        request_bytes=row.request_bytes,
        response_bytes=row.response_bytes,
        request_truncated=row.request_truncated,
        response_truncated=row.response_truncated,
    )


def _scope(value: cpb.CaptureScope) -> policies.Scope:
    return policies.scope_of(int(value.kind), value.id)


class CaptureServiceHandler(CaptureService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._deps = deps

    async def set_capture_policy(self, request: pb.SetCapturePolicyRequest, ctx: Ctx) -> pb.SetCapturePolicyResponse:
        scope = _scope(request.scope)
        state = "on" if request.enabled else "off"
        # The audit event says what was turned on or off: "<scope kind>/<id> on|off".
        named = f"{_SCOPE_NAMES[scope.kind]}/{scope.id or request.tenant_id} {state}"
        CallRecorder.described(lambda: (request.tenant_id, named))
        async with self._db.transaction() as s:
            found = await policies.set_policy(
                s, current_principal(), tenant_id=request.tenant_id, scope=scope, enabled=request.enabled
            )
            # Named after the tenant it acted on, which a request may leave to the session's scope.
            acted = f"{_SCOPE_NAMES[scope.kind]}/{scope.id or found.tenant_id} {state}"
            CallRecorder.described(lambda: (found.tenant_id, acted))
        return pb.SetCapturePolicyResponse(policy=_policy(found))

    async def get_capture_policy(self, request: pb.GetCapturePolicyRequest, ctx: Ctx) -> pb.GetCapturePolicyResponse:
        scope = _scope(request.scope)
        async with self._db.read() as s:
            found, capturing = await policies.get_policy(
                s, current_principal(), tenant_id=request.tenant_id, scope=scope
            )
        return pb.GetCapturePolicyResponse(policy=_policy(found), capturing=capturing)

    async def list_capture_policies(
        self, request: pb.ListCapturePoliciesRequest, ctx: Ctx
    ) -> pb.ListCapturePoliciesResponse:
        async with self._db.read() as s:
            found = await policies.list_policies(s, current_principal(), tenant_id=request.tenant_id)
        return pb.ListCapturePoliciesResponse(policies=[_policy(p) for p in found])

    async def grant_capture_access(
        self, request: pb.GrantCaptureAccessRequest, ctx: Ctx
    ) -> pb.GrantCaptureAccessResponse:
        async with self._db.transaction() as s:
            found = await policies.grant_capture(
                s, current_principal(), tenant_id=request.tenant_id, user_id=request.user_id
            )
        return pb.GrantCaptureAccessResponse(grant=_grant(found))

    async def revoke_capture_access(
        self, request: pb.RevokeCaptureAccessRequest, ctx: Ctx
    ) -> pb.RevokeCaptureAccessResponse:
        async with self._db.transaction() as s:
            await policies.revoke_capture(s, current_principal(), tenant_id=request.tenant_id, user_id=request.user_id)
        return pb.RevokeCaptureAccessResponse()

    async def list_capture_access(self, request: pb.ListCaptureAccessRequest, ctx: Ctx) -> pb.ListCaptureAccessResponse:
        async with self._db.read() as s:
            found = await policies.list_grants(s, current_principal(), tenant_id=request.tenant_id)
        return pb.ListCaptureAccessResponse(grants=[_grant(g) for g in found])

    async def list_captured_exchanges(
        self, request: pb.ListCapturedExchangesRequest, ctx: Ctx
    ) -> pb.ListCapturedExchangesResponse:
        start = time_field(request, "start_time", "startTime")
        end = time_field(request, "end_time", "endTime")
        async with self._db.read() as s:
            tenant = await permissions.capture_reach(s, current_principal(), request.tenant_id)
            page = await list_exchanges(
                s,
                ExchangeFilter(
                    tenant_id=tenant,
                    api_key_id=request.api_key_id,
                    service_account_id=request.service_account_id,
                    user_id=request.user_id,
                    model=request.model,
                    call_kind=int(request.call_kind),
                    start=start,
                    end=end,
                ),
                page_size=request.page_size,
                page_token=request.page_token,
            )
        return pb.ListCapturedExchangesResponse(
            exchanges=[_exchange(r) for r in page.exchanges], next_page_token=page.next_token
        )

    async def get_captured_exchange(
        self, request: pb.GetCapturedExchangeRequest, ctx: Ctx
    ) -> pb.GetCapturedExchangeResponse:
        if not request.id:
            raise InvalidArgument("id is required", field="id")
        box = self._deps.secret_box()
        async with self._db.read() as s:
            tenant = await permissions.capture_reach(s, current_principal(), request.tenant_id)
            opened = await open_exchange(s, request.id, tenant, box.open_blob)
        CallRecorder.acted_on(opened.row.tenant_id)
        usage = opened.usage
        return pb.GetCapturedExchangeResponse(
            exchange=_exchange(opened.row),
            usage=cpb.CapturedUsage(
                usage_event_id=usage.id,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
                latency_ms=usage.latency_ms,
            )
            if usage is not None
            else None,
            request_body=opened.request_body.decode(errors="replace"),
            response_body=opened.response_body.decode(errors="replace"),
        )
