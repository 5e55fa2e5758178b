"""Strings holding NUL are refused right after decoding (server.nul_text via server.codecs), wherever they sit and
in either encoding; PostgreSQL's text cannot hold them (its driver raised, an internal error)."""

from __future__ import annotations

import pytest
from connectrpc.errors import ConnectError
from google.protobuf import json_format

from gen.platform.conversations.v1.conversation_service_pb2 import CreateConversationRequest
from server.codecs import management_codecs
from server.nul_text import find_nul

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
