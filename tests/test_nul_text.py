"""Strings holding NUL are refused right after decoding (server.nul_text via server.codecs), wherever they sit and
in either encoding; PostgreSQL's text cannot hold them (its driver raised, an internal error). So is a page token
hiding one in its base64, which no check of the request's strings could see (server.domain.pages,
server.store.keyset)."""

from __future__ import annotations

import base64

import orjson
import pytest
from connectrpc.errors import ConnectError
from google.protobuf import json_format

from gen.platform.conversations.v1.conversation_service_pb2 import CreateConversationRequest
from server.codecs import management_codecs
from server.nul_text import find_nul
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.world import make_world, must

NUL = "a\x00b"


@pytest.mark.parametrize(
    ("request_json", "path"),
    [
        ({"tenantId": NUL}, "tenantId"),
        ({"metadata": {NUL: "v"}}, "metadata"),
        ({"metadata": {"k": NUL}}, "metadata.k"),
        ({"items": [{"type": "message"}, {"content": [{"type": "t"}, {"text": NUL}]}]}, "items[1].content[1].text"),
        ({"items": [{"extra": {"deep": [{"x": NUL}]}}]}, "items[0].extra.fields.deep.listValue.values[0]"),
        ({"tenantId": "t", "metadata": {"k": "v"}, "items": [{"content": [{"text": "fine"}]}]}, None),
    ],
)
def test_a_nul_is_found_and_named_wherever_it_sits(request_json: dict[str, object], path: str | None) -> None:
    message = json_format.ParseDict(request_json, CreateConversationRequest())
    found = find_nul(message)
    assert (found is None) if path is None else (found is not None and found.startswith(path)), found


def test_both_encodings_refuse_it_and_accept_text_without_it() -> None:
    message = json_format.ParseDict({"tenantId": "t", "items": [{"role": NUL}]}, CreateConversationRequest())
    clean = json_format.ParseDict({"tenantId": "t", "items": [{"role": "user"}]}, CreateConversationRequest())
    for codec in management_codecs():
        encoded = (
            message.SerializeToString() if codec.name() == "proto" else json_format.MessageToJson(message).encode()
        )
        with pytest.raises(ConnectError) as refused:
            codec.decode(encoded, CreateConversationRequest)
        assert "items[0].role" in refused.value.message and "NUL" in refused.value.message
        ok = clean.SerializeToString() if codec.name() == "proto" else json_format.MessageToJson(clean).encode()
        assert codec.decode(ok, CreateConversationRequest) == clean


async def test_a_page_token_hiding_nul_is_invalid_argument(server: Server, connect: ConnectJsonCaller) -> None:
    world = await make_world(server, connect)
    admin = world.tokens["admin"]
    listed = "switchboard.tenants.v1.TenantListService/ListGroups"
    groups = base64.urlsafe_b64encode(orjson.dumps(["groups", "a" + NUL])).decode().rstrip("=")
    audited = base64.urlsafe_b64encode(f"2026-01-01T00:00:00+00:00|aud_{NUL}".encode()).decode()
    must(await connect.call(listed, {"tenantId": world.tenant_id}, token=admin))
    for method, body, token in [
        (listed, {"tenantId": world.tenant_id, "page": {"pageToken": groups}}, admin),
        ("switchboard.audit.v1.AuditService/ListAuditEvents", {"pageToken": audited}, server.admin_token),
    ]:
        answer = await connect.call(method, body, token=token)
        assert answer.code == "invalid_argument" and "page_token" in answer.body["message"], (method, answer)
