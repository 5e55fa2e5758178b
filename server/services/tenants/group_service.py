"""/platform.tenants.v1.GroupService/* — gates and rules live in server.domain.groups and server.permissions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connectrpc.request import RequestContext

from gen.platform.tenants.v1 import group_service_pb2 as pb
from gen.platform.tenants.v1.group_service_connect import GroupService
from server.answers import ANSWERS
from server.domain import groups
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert

__all__ = ["GroupServiceHandler"]

Ctx = RequestContext[Any, Any]


class GroupServiceHandler(GroupService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_group(self, request: pb.CreateGroupRequest, ctx: Ctx) -> pb.CreateGroupResponse:
        async with self._db.transaction() as s:
            group = await groups.create_group(s, current_principal(), request.tenant_id, request.name)
        return pb.CreateGroupResponse(group=convert.group(group))

    async def list_groups(self, request: pb.ListGroupsRequest, ctx: Ctx) -> pb.ListGroupsResponse:
        async with self._db.lone_read() as s:
            found = await groups.list_groups(
                s, current_principal(), request.tenant_id, api_key_attachable=request.api_key_attachable
            )
        # A kept list (GroupLists) gets its kept response, weighed as GroupLists weighs it.
        return ANSWERS.message(found, _list_response, weight=groups.list_weight(found))

    async def delete_group(self, request: pb.DeleteGroupRequest, ctx: Ctx) -> pb.DeleteGroupResponse:
        async with self._db.transaction() as s:
            await groups.delete_group(s, current_principal(), request.tenant_id, request.group_id)
        return pb.DeleteGroupResponse()

    async def list_group_members(self, request: pb.ListGroupMembersRequest, ctx: Ctx) -> pb.ListGroupMembersResponse:
        async with self._db.transaction() as s:
            members = await groups.list_group_members(s, current_principal(), request.tenant_id, request.group_id)
        return pb.ListGroupMembersResponse(members=[convert.group_member(m) for m in members])

    async def add_group_member(self, request: pb.AddGroupMemberRequest, ctx: Ctx) -> pb.AddGroupMemberResponse:
        async with self._db.transaction() as s:
            await groups.add_group_member(s, current_principal(), request.tenant_id, request.group_id, request.user_id)
        return pb.AddGroupMemberResponse()

    async def remove_group_member(self, request: pb.RemoveGroupMemberRequest, ctx: Ctx) -> pb.RemoveGroupMemberResponse:
        async with self._db.transaction() as s:
            await groups.remove_group_member(
                s, current_principal(), request.tenant_id, request.group_id, request.user_id
            )
        return pb.RemoveGroupMemberResponse()


def _list_response(found: Sequence[groups.Group]) -> pb.ListGroupsResponse:
    response = pb.ListGroupsResponse()
    convert.add_groups(response.groups, found)
    return response
