"""/platform.tenants.v1.ApiKeyService/* — rules in server.domain.api_keys; verification in server.keyauth."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.tenants.v1 import api_key_service_pb2 as pb
from gen.platform.tenants.v1.api_key_service_connect import ApiKeyService
from server.domain import api_keys
from server.domain.api_keys import KeyState
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert

__all__ = ["ApiKeyServiceHandler"]

Ctx = RequestContext[Any, Any]


class ApiKeyServiceHandler(ApiKeyService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_api_key(self, request: pb.CreateApiKeyRequest, ctx: Ctx) -> pb.CreateApiKeyResponse:
        grants = tuple(convert.resource_ref(g, "grants") for g in request.grants)
        expire = convert.datetime_of(request.expire_time) if request.HasField("expire_time") else None
        async with self._db.transaction() as s:
            created = await api_keys.create_key(
                s,
                current_principal(),
                request.tenant_id,
                key_type=int(request.type),
                name=request.name,
                description=request.description,
                service_account_id=request.service_account_id,
                expire_at=expire,
                grants=grants,
                group_ids=tuple(request.group_ids),
            )
        return pb.CreateApiKeyResponse(api_key=convert.api_key(created.key), secret=created.secret)

    async def get_api_key(self, request: pb.GetApiKeyRequest, ctx: Ctx) -> pb.GetApiKeyResponse:
        async with self._db.transaction() as s:
            key = await api_keys.get_key(s, current_principal(), request.tenant_id, request.api_key_id)
        return pb.GetApiKeyResponse(api_key=convert.api_key(key))

    async def list_api_keys(self, request: pb.ListApiKeysRequest, ctx: Ctx) -> pb.ListApiKeysResponse:
        account = request.service_account_id if request.HasField("service_account_id") else None
        async with self._db.transaction() as s:
            keys = await api_keys.list_keys(
                s,
                current_principal(),
                request.tenant_id,
                service_account_id=account,
                include_revoked=request.include_revoked,
            )
        return pb.ListApiKeysResponse(api_keys=[convert.api_key(k) for k in keys])

    async def update_api_key(self, request: pb.UpdateApiKeyRequest, ctx: Ctx) -> pb.UpdateApiKeyResponse:
        async with self._db.transaction() as s:
            key = await api_keys.update_key(
                s,
                current_principal(),
                request.tenant_id,
                request.api_key_id,
                name=request.name if request.HasField("name") else None,
                description=request.description if request.HasField("description") else None,
                expire_at=convert.datetime_of(request.expire_time) if request.HasField("expire_time") else None,
            )
        return pb.UpdateApiKeyResponse(api_key=convert.api_key(key))

    async def _set_state(self, request: Any, state: KeyState) -> api_keys.ApiKey:
        async with self._db.transaction() as s:
            return await api_keys.set_state(s, current_principal(), request.tenant_id, request.api_key_id, state)

    async def disable_api_key(self, request: pb.DisableApiKeyRequest, ctx: Ctx) -> pb.DisableApiKeyResponse:
        return pb.DisableApiKeyResponse(api_key=convert.api_key(await self._set_state(request, KeyState.DISABLED)))

    async def enable_api_key(self, request: pb.EnableApiKeyRequest, ctx: Ctx) -> pb.EnableApiKeyResponse:
        return pb.EnableApiKeyResponse(api_key=convert.api_key(await self._set_state(request, KeyState.ACTIVE)))

    async def revoke_api_key(self, request: pb.RevokeApiKeyRequest, ctx: Ctx) -> pb.RevokeApiKeyResponse:
        return pb.RevokeApiKeyResponse(api_key=convert.api_key(await self._set_state(request, KeyState.REVOKED)))

    async def add_api_key_grant(self, request: pb.AddApiKeyGrantRequest, ctx: Ctx) -> pb.AddApiKeyGrantResponse:
        ref = convert.resource_ref(request.grant)
        async with self._db.transaction() as s:
            key = await api_keys.add_grant(s, current_principal(), request.tenant_id, request.api_key_id, ref)
        return pb.AddApiKeyGrantResponse(api_key=convert.api_key(key))

    async def remove_api_key_grant(
        self, request: pb.RemoveApiKeyGrantRequest, ctx: Ctx
    ) -> pb.RemoveApiKeyGrantResponse:
        ref = convert.resource_ref(request.grant)
        async with self._db.transaction() as s:
            key = await api_keys.remove_grant(s, current_principal(), request.tenant_id, request.api_key_id, ref)
        return pb.RemoveApiKeyGrantResponse(api_key=convert.api_key(key))

    async def attach_api_key_to_group(
        self, request: pb.AttachApiKeyToGroupRequest, ctx: Ctx
    ) -> pb.AttachApiKeyToGroupResponse:
        async with self._db.transaction() as s:
            key = await api_keys.attach_group(
                s, current_principal(), request.tenant_id, request.api_key_id, request.group_id
            )
        return pb.AttachApiKeyToGroupResponse(api_key=convert.api_key(key))

    async def detach_api_key_from_group(
        self, request: pb.DetachApiKeyFromGroupRequest, ctx: Ctx
    ) -> pb.DetachApiKeyFromGroupResponse:
        async with self._db.transaction() as s:
            key = await api_keys.detach_group(
                s, current_principal(), request.tenant_id, request.api_key_id, request.group_id
            )
        return pb.DetachApiKeyFromGroupResponse(api_key=convert.api_key(key))
