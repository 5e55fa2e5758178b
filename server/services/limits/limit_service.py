"""/switchboard.limits.v1.LimitService/* — rules in server.domain.limits, gates in server.permissions.limits."""

from __future__ import annotations

import time
from typing import Any

from connectrpc.request import RequestContext

from gen.switchboard.limits.v1 import limit_service_pb2 as pb
from gen.switchboard.limits.v1.limit_service_connect import LimitService
from server.domain import limits
from server.domain.limits_usage import limit_usage
from server.domain.pages import walk
from server.services import Deps
from server.services.context import current_principal
from server.services.limits import convert

__all__ = ["LimitServiceHandler"]

Ctx = RequestContext[Any, Any]


def _policy_key(key: list[str]) -> tuple[int, int, str]:
    """A ListLimitPolicies token's sort key (tier, scope kind, scope id). Read through the enums: a forged number no
    policy can have (a 20-digit one no database integer holds) is a ValueError, which `walk` refuses as a token of
    another list instead of binding it."""
    return int(limits.Tier(int(key[0]))), int(limits.ScopeKind(int(key[1]))), key[2]


class LimitServiceHandler(LimitService):
    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self._db = deps.db

    async def set_limit_policy(self, request: pb.SetLimitPolicyRequest, ctx: Ctx) -> pb.SetLimitPolicyResponse:
        tier = convert.tier(request.tier)
        scope = convert.scope(request.scope)
        values = convert.limit_values(request.limits)
        async with self._db.transaction() as s:
            found = await limits.set_policy(
                s, current_principal(), tenant_id=request.tenant_id, tier=tier, scope=scope, limits=values
            )
        return pb.SetLimitPolicyResponse(policy=convert.policy(found))

    async def delete_limit_policy(self, request: pb.DeleteLimitPolicyRequest, ctx: Ctx) -> pb.DeleteLimitPolicyResponse:
        tier = convert.tier(request.tier)
        scope = convert.scope(request.scope)
        async with self._db.transaction() as s:
            await limits.delete_policy(s, current_principal(), tenant_id=request.tenant_id, tier=tier, scope=scope)
        return pb.DeleteLimitPolicyResponse()

    async def list_limit_policies(self, request: pb.ListLimitPoliciesRequest, ctx: Ctx) -> pb.ListLimitPoliciesResponse:
        principal = current_principal()
        scope = convert.scope(request.scope) if request.HasField("scope") else None
        async with self._db.read() as s:
            page = await walk(
                "limit_policies",
                request.page.page_token,
                request.page.page_size,
                parts=3,
                fetch=lambda window: limits.list_policies(
                    s, principal, tenant_id=request.tenant_id, scope=scope, window=window
                ),
                key=lambda p: (str(int(p.tier)), str(int(p.scope.kind)), p.scope.id),
                parse=_policy_key,
            )
        return pb.ListLimitPoliciesResponse(
            policies=[convert.policy(p) for p in page.items], next_page_token=page.next_token
        )

    async def get_limit_usage(self, request: pb.GetLimitUsageRequest, ctx: Ctx) -> pb.GetLimitUsageResponse:
        async with self._db.read() as s:
            found = await limit_usage(
                s,
                current_principal(),
                tenant_id=request.tenant_id,
                api_key_id=request.api_key_id,
                model=request.model,
                counters=self._deps.shared_limit_counters(),
                now=time.time(),
                scope=convert.scope(request.scope) if request.HasField("scope") else None,
            )
        return pb.GetLimitUsageResponse(limits=[convert.limit_use(u) for u in found])
