"""/platform.agents.v1.PresetAgentService/* — rules in server.domain.preset_agents."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.agents.v1 import preset_agent_service_pb2 as pb
from gen.platform.agents.v1.preset_agent_service_connect import PresetAgentService
from server.domain import preset_agents
from server.domain.validation import require_nonempty
from server.permissions import ResourceKind
from server.services import Deps, resource_calls
from server.services.agents import preset_agent_convert as convert
from server.services.context import current_principal

__all__ = ["PresetAgentServiceHandler"]

Ctx = RequestContext[Any, Any]
KIND = ResourceKind.PRESET_AGENT


class PresetAgentServiceHandler(PresetAgentService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_preset_agent(self, request: pb.CreatePresetAgentRequest, ctx: Ctx) -> pb.CreatePresetAgentResponse:
        async with self._db.transaction() as s:
            created = await preset_agents.create(
                s, current_principal(), convert.spec(request.preset_agent), tenant_id=request.tenant_id
            )
        return pb.CreatePresetAgentResponse(preset_agent=convert.agent(created))

    async def create_platform_preset_agent(
        self, request: pb.CreatePlatformPresetAgentRequest, ctx: Ctx
    ) -> pb.CreatePlatformPresetAgentResponse:
        async with self._db.transaction() as s:
            created = await preset_agents.create(
                s, current_principal(), convert.spec(request.preset_agent), tenant_id=None
            )
        return pb.CreatePlatformPresetAgentResponse(preset_agent=convert.agent(created))

    async def get_preset_agent(self, request: pb.GetPresetAgentRequest, ctx: Ctx) -> pb.GetPresetAgentResponse:
        async with self._db.read() as s:
            found = await preset_agents.get(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.GetPresetAgentResponse(preset_agent=convert.agent(found))

    async def update_preset_agent(self, request: pb.UpdatePresetAgentRequest, ctx: Ctx) -> pb.UpdatePresetAgentResponse:
        async with self._db.transaction() as s:
            updated = await preset_agents.update(s, current_principal(), convert.spec(request.preset_agent))
        return pb.UpdatePresetAgentResponse(preset_agent=convert.agent(updated))

    async def delete_preset_agent(self, request: pb.DeletePresetAgentRequest, ctx: Ctx) -> pb.DeletePresetAgentResponse:
        async with self._db.transaction() as s:
            await preset_agents.delete(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.DeletePresetAgentResponse()

    async def list_preset_agents(self, request: pb.ListPresetAgentsRequest, ctx: Ctx) -> pb.ListPresetAgentsResponse:
        async with self._db.read() as s:
            found = await preset_agents.list_readable(s, current_principal(), tenant_id=request.tenant_id)
        return pb.ListPresetAgentsResponse(preset_agents=[convert.agent(a) for a in found])

    async def list_preset_agent_permissions(
        self, request: pb.ListPresetAgentPermissionsRequest, ctx: Ctx
    ) -> pb.ListPresetAgentPermissionsResponse:
        found = await resource_calls.list_permissions(self._db, KIND, request)
        return pb.ListPresetAgentPermissionsResponse(permissions=found)

    async def add_preset_agent_permission(
        self, request: pb.AddPresetAgentPermissionRequest, ctx: Ctx
    ) -> pb.AddPresetAgentPermissionResponse:
        await resource_calls.add_permission(self._db, KIND, request)
        return pb.AddPresetAgentPermissionResponse()

    async def remove_preset_agent_permission(
        self, request: pb.RemovePresetAgentPermissionRequest, ctx: Ctx
    ) -> pb.RemovePresetAgentPermissionResponse:
        await resource_calls.remove_permission(self._db, KIND, request)
        return pb.RemovePresetAgentPermissionResponse()
