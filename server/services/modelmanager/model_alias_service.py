"""/platform.modelmanager.v1.ModelAliasService/* — rules in server.domain.model_aliases."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.modelmanager.v1 import model_alias_service_pb2 as pb
from gen.platform.modelmanager.v1.model_alias_service_connect import ModelAliasService
from server.domain import model_aliases
from server.domain.validation import require_nonempty
from server.services import Deps
from server.services.context import current_principal
from server.services.modelmanager import convert

__all__ = ["ModelAliasServiceHandler"]

Ctx = RequestContext[Any, Any]


class ModelAliasServiceHandler(ModelAliasService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_model_alias(self, request: pb.CreateModelAliasRequest, ctx: Ctx) -> pb.CreateModelAliasResponse:
        async with self._db.transaction() as s:
            created = await model_aliases.create(s, current_principal(), convert.alias_spec(request.alias))
        return pb.CreateModelAliasResponse(name=created.name, alias=convert.alias(created))

    async def get_model_alias(self, request: pb.GetModelAliasRequest, ctx: Ctx) -> pb.GetModelAliasResponse:
        async with self._db.transaction() as s:
            found = await model_aliases.get(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.GetModelAliasResponse(name=found.name, alias=convert.alias(found))

    async def update_model_alias(self, request: pb.UpdateModelAliasRequest, ctx: Ctx) -> pb.UpdateModelAliasResponse:
        name = require_nonempty(request.name, "name")
        async with self._db.transaction() as s:
            updated = await model_aliases.update(s, current_principal(), name, convert.alias_spec(request.alias))
        return pb.UpdateModelAliasResponse(name=updated.name, alias=convert.alias(updated))

    async def delete_model_alias(self, request: pb.DeleteModelAliasRequest, ctx: Ctx) -> pb.DeleteModelAliasResponse:
        async with self._db.transaction() as s:
            await model_aliases.delete(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.DeleteModelAliasResponse()

    async def list_model_aliases(self, request: pb.ListModelAliasesRequest, ctx: Ctx) -> pb.ListModelAliasesResponse:
        async with self._db.transaction() as s:
            found = await model_aliases.list_readable(s, current_principal())
        items = [pb.ListModelAliasesResponse.Item(name=a.name, alias=convert.alias(a)) for a in found]
        return pb.ListModelAliasesResponse(aliases=items)
