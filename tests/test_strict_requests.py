"""Requests follow the protobuf JSON mapping strictly (issue 22, item 9): an unknown field, an unknown enum name or
an enum number the contract does not define is invalid_argument naming it, over Connect JSON (POST and GET
`message=`), Connect binary and gRPC, and nothing is written. Before, `"role": "ADMIN"` made an EDITOR and a
misspelled `tenantID` was dropped, answered with "tenant_id is required"."""

from __future__ import annotations

import json
import secrets
import struct
import urllib.parse
from typing import Any

import aiohttp
import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import message_factory

from gen.platform.conversations.v1 import conversation_item_service_pb2, conversation_service_pb2
from gen.platform.modelmanager.v1 import capabilities_pb2, external_model_pb2, external_model_service_pb2
from gen.platform.tenants.v1 import api_key_pb2, api_key_service_pb2, tenant_service_pb2, tenant_service_pb2_grpc
from server.app import generated_services
from server.codecs import management_codecs
from server.defined_enums import find_undefined_enum
from tests.clients import ConnectJsonCaller
from tests.world import GROUPS, TENANTS, World, make_world, must

ADD_MEMBER = f"{TENANTS}/AddTenantMember"


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _members(connect: ConnectJsonCaller, world: World) -> list[str]:
    answer = must(
        await connect.call(f"{TENANTS}/ListTenantMembers", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )
    return [m.get("userId", "") for m in answer["members"]]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("role", "ADMIN", "ADMIN"),
        ("role", "TENANT_ROLE_BOGUS", "TENANT_ROLE_BOGUS"),
        ("role", 99, "role"),
        ("role", "99", "role"),
        ("tenantID", "x", "tenantID"),
        ("member", {"role": "TENANT_ROLE_ADMIN"}, "member"),
    ],
)
async def test_connect_json_refuses_unknown_names_and_numbers(
    connect: ConnectJsonCaller, world: World, field: str, value: Any, named: str
) -> None:
    user = f"strict-{secrets.token_hex(3)}"
    body = {"tenantId": world.tenant_id, "userId": user, field: value}
    answer = await connect.call(ADD_MEMBER, body, token=world.tokens["admin"])
    assert answer.code == "invalid_argument", answer
    assert named in answer.message
    assert user not in await _members(connect, world)


async def test_defined_names_numbers_and_original_field_names_still_work(
    connect: ConnectJsonCaller, world: World
) -> None:
    admin = world.tokens["admin"]
    by_name = f"strict-{secrets.token_hex(3)}"
    added = must(
        await connect.call(
            ADD_MEMBER, {"tenant_id": world.tenant_id, "user_id": by_name, "role": "TENANT_ROLE_MEMBER"}, token=admin
        )
    )
    assert added["member"]["role"] == "TENANT_ROLE_MEMBER"
    by_number = f"strict-{secrets.token_hex(3)}"
    added = must(
        await connect.call(ADD_MEMBER, {"tenantId": world.tenant_id, "userId": by_number, "role": 3}, token=admin)
    )
    assert added["member"]["role"] == "TENANT_ROLE_ADMIN"


async def test_connect_get_message_is_as_strict(server: Any, world: World) -> None:
    for message, named in (({"tenantID": world.tenant_id}, "tenantID"), ({"tenantId": world.tenant_id, "x": 1}, '"x"')):
        query = urllib.parse.urlencode({"encoding": "json", "message": json.dumps(message)})
        async with (
            aiohttp.ClientSession() as http,
            http.get(
                f"{server.base_url}/{GROUPS}/ListGroups?{query}",
                headers={"Authorization": f"Bearer {world.tokens['admin']}"},
            ) as resp,
        ):
            answer = await resp.json()
        assert resp.status == 400 and answer["code"] == "invalid_argument", answer
        assert named in answer["message"]


async def test_connect_binary_refuses_an_undefined_enum_number(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    user = f"strict-{secrets.token_hex(3)}"
    request = tenant_service_pb2.AddTenantMemberRequest(tenant_id=world.tenant_id, user_id=user, role=99)  # type: ignore[arg-type]
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.base_url}/{ADD_MEMBER}",
            data=request.SerializeToString(),
            headers={"Content-Type": "application/proto", "Authorization": f"Bearer {world.tokens['admin']}"},
        ) as resp,
    ):
        answer = await resp.json()
    assert resp.status == 400 and answer["code"] == "invalid_argument", answer
    assert answer["message"].startswith("role: 99 is not a value of platform.tenants.v1.TenantRole")
    assert user not in await _members(connect, world)


async def test_grpc_refuses_an_undefined_enum_number(server: Any, connect: ConnectJsonCaller, world: World) -> None:
    user = f"strict-{secrets.token_hex(3)}"
    request = tenant_service_pb2.AddTenantMemberRequest(tenant_id=world.tenant_id, user_id=user, role=7)  # type: ignore[arg-type]
    async with grpc.aio.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        stub = tenant_service_pb2_grpc.TenantServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.AddTenantMember(request, metadata=[("authorization", f"Bearer {world.tokens['admin']}")])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "role: 7" in (refused.value.details() or "")
    assert user not in await _members(connect, world)


async def test_grpc_web_json_refuses_an_unknown_field(server: Any, world: World) -> None:
    body = b'{"tenantId": "%s", "userID": "u"}' % world.tenant_id.encode()
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.base_url}/{ADD_MEMBER}",
            data=b"\x00" + struct.pack(">I", len(body)) + body,
            headers={"Content-Type": "application/grpc-web+json", "Authorization": f"Bearer {world.tokens['admin']}"},
        ) as resp,
    ):
        answer = await resp.read()
    assert b"grpc-status: 3\r\n" in answer and b"userID" in answer, answer[-300:]


def test_undefined_numbers_are_found_at_any_depth() -> None:
    keys = api_key_service_pb2.CreateApiKeyRequest(
        grants=[api_key_pb2.ResourceRef(kind=1, name="a"), api_key_pb2.ResourceRef(kind=99, name="b")]  # type: ignore[arg-type]
    )
    found = find_undefined_enum(keys)
    assert found is not None and (found.path, found.number) == ("grants[1].kind", 99)
    assert "RESOURCE_KIND_UNSPECIFIED" in found.message()
    model = external_model_service_pb2.CreateExternalModelRequest(
        external_model=external_model_pb2.ExternalModel(
            capabilities=capabilities_pb2.ModelCapabilities(input_modalities=[1, 42])  # type: ignore[list-item]
        )
    )
    found = find_undefined_enum(model)
    assert found is not None and found.path == "externalModel.capabilities.inputModalities[1]"
    assert find_undefined_enum(external_model_service_pb2.CreateExternalModelRequest()) is None
    assert find_undefined_enum(tenant_service_pb2.AddTenantMemberRequest(role=3)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"tenantID": "t"}', 'no field named "tenantID"'),
        (b'{"role": "ADMIN"}', "Invalid enum value ADMIN"),
        (b'{"role": 42}', "role: 42 is not a value of platform.tenants.v1.TenantRole"),
    ],
)
def test_the_codecs_refuse_in_one_line_naming_the_field(body: bytes, named: str) -> None:
    binary, json_codec = management_codecs()
    with pytest.raises(ConnectError) as refused:
        json_codec.decode(body, tenant_service_pb2.AddTenantMemberRequest)
    assert refused.value.code == Code.INVALID_ARGUMENT
    assert named in refused.value.message and "\n" not in refused.value.message
    as_binary = tenant_service_pb2.AddTenantMemberRequest(role=42).SerializeToString()  # type: ignore[arg-type]
    with pytest.raises(ConnectError, match="role: 42"):
        binary.decode(as_binary, tenant_service_pb2.AddTenantMemberRequest)


def test_every_request_type_of_the_contract_has_a_plan() -> None:
    for service in generated_services():
        for method in service.descriptor.methods:
            empty = message_factory.GetMessageClass(method.input_type)()
            assert find_undefined_enum(empty) is None, method.full_name


@pytest.mark.parametrize(
    ("body", "message_class", "named"),
    [
        (b'{"userId": "a", "user_id": "b"}', tenant_service_pb2.AddTenantMemberRequest, "'userId' and 'user_id'"),
        (b'{"user_id": "a", "userId": "b"}', tenant_service_pb2.AddTenantMemberRequest, "'user_id' and 'userId'"),
        (b'{"userId": "a", "userId": "b"}', tenant_service_pb2.AddTenantMemberRequest, "duplicate key 'userId'"),
        (
            b'{"items": [{"type": "x"}, {"callId": "a", "call_id": "b"}]}',
            conversation_item_service_pb2.CreateItemsRequest,
            "'call_id' is given twice",
        ),
    ],
)
def test_a_field_given_twice_in_any_spelling_is_refused(body: bytes, message_class: type[Any], named: str) -> None:
    """The protobuf JSON mapping refuses a field under both its names; json_format kept whichever came last."""
    _, json_codec = management_codecs()
    with pytest.raises(ConnectError) as refused:
        json_codec.decode(body, message_class)
    assert refused.value.code == Code.INVALID_ARGUMENT
    assert named in refused.value.message


def test_keys_that_are_data_may_look_like_both_spellings() -> None:
    """A Struct's and a map's keys are the client's data, not field names."""
    _, json_codec = management_codecs()
    item = b'{"type": "x", "extra": {"call_id": 1, "callId": 2}}'
    decoded = json_codec.decode(b'{"items": [%s]}' % item, conversation_item_service_pb2.CreateItemsRequest)
    assert dict(decoded.items[0].extra) == {"call_id": 1, "callId": 2}
    metadata = b'{"metadata": {"tenant_id": "a", "tenantId": "b"}}'
    created = json_codec.decode(metadata, conversation_service_pb2.CreateConversationRequest)
    assert dict(created.metadata) == {"tenant_id": "a", "tenantId": "b"}
