"""Bad input answers the right 4xx naming the field, never a 500 or exception text (issue 9, finding 6)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.conftest import Server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rawhttp import RawResponse, raw_request

NOT_UTF8 = b"\xff\xfe\xc3\x28"
LEAKS = ("Traceback", "UnicodeDecodeError", "ValueError", "codec can't decode", "year 10007", "Exception")


def _no_leak(text: bytes | str) -> None:
    shown = text.decode(errors="replace") if isinstance(text, bytes) else text
    for marker in LEAKS:
        assert marker not in shown, shown[:300]


async def _connect(
    server: Server, method: str, body: dict[str, Any], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> RawResponse:
    headers = [
        (b"Content-Type", b"application/json"),
        (b"Authorization", f"Bearer {server.admin_token}".encode()),
        *extra,
    ]
    return await raw_request(server.base_url, "POST", f"/{method}", headers, orjson.dumps(body))


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        (
            "platform.modelmanager.v1.ModelDeploymentService/ListModelDeploymentPermissions",
            {"name": "anything", "subjectType": "SUBJECT_TYPE_UNSPECIFIED"},
            "subjectType",
        ),
        (
            "platform.modelmanager.v1.ExternalModelService/ListExternalModelPermissions",
            {"name": "anything", "role": "DEPLOYMENT_ROLE_UNSPECIFIED"},
            "role",
        ),
        (
            "platform.agents.v1.ExternalMcpServerService/ListExternalMcpServerPermissions",
            {"name": "anything", "subjectType": "SUBJECT_TYPE_UNSPECIFIED"},
            "subjectType",
        ),
        (
            "platform.metering.v1.PlatformUsageService/ListPlatformTokenUsage",
            {"window": {"startTime": "2026-01-01T00:00:00Z", "endTime": "9999-12-31T00:00:00Z"}},
            "window",
        ),
    ],
)
async def test_management_refusals_name_the_field(
    server: Server, method: str, body: dict[str, Any], field: str
) -> None:
    answer = await _connect(server, method, body)
    assert answer.status == 400, answer.body[:300]
    payload = orjson.loads(answer.body)
    assert payload["code"] == "invalid_argument"
    assert field in payload["message"]
    _no_leak(answer.body)


@pytest.mark.parametrize("header", [b"X-Platform-Tenant-Id", b"X-Anything"])
async def test_management_non_utf8_header_values_are_400(server: Server, header: bytes) -> None:
    answer = await _connect(server, "platform.tenants.v1.TenantService/ListTenants", {}, ((header, NOT_UTF8),))
    assert answer.status == 400, answer.body[:300]
    assert b"invalid_argument" in answer.body
    _no_leak(answer.body)


async def test_management_non_utf8_bearer_is_401(server: Server) -> None:
    answer = await raw_request(
        server.base_url,
        "POST",
        "/platform.tenants.v1.TenantService/ListTenants",
        [(b"Content-Type", b"application/json"), (b"Authorization", b"Bearer " + NOT_UTF8)],
        b"{}",
    )
    assert answer.status in (400, 401), answer.body[:300]
    _no_leak(answer.body)


def _openai_error(answer: RawResponse, status: int) -> dict[str, Any]:
    assert answer.status == status, answer.body[:300]
    assert answer.headers.get("content-type", "").startswith("application/json"), answer.headers
    error: dict[str, Any] = orjson.loads(answer.body)["error"]
    assert error["message"] and error["type"]
    _no_leak(answer.body)
    return error


async def _gw(
    gateway: Gateway, key: str, path: str, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> RawResponse:
    base = gateway.base_url.removesuffix("/v1")
    headers = [(b"Content-Type", b"application/json"), (b"Authorization", f"Bearer {key}".encode()), *extra]
    return await raw_request(base, "POST", path, headers, body)


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        ("/v1/responses", "temperature", "hot"),
        ("/v1/responses", "top_p", [1]),
        ("/v1/responses", "max_output_tokens", "many"),
        ("/v1/chat/completions", "temperature", "hot"),
        ("/v1/chat/completions", "top_p", {"a": 1}),
        ("/v1/chat/completions", "max_tokens", 1.5),
        ("/v1/chat/completions", "n", "two"),
        ("/v1/chat/completions", "stream", "yes"),
    ],
)
async def test_gateway_sampling_fields_are_type_checked(
    gateway: Gateway, gw_world: GatewayWorld, path: str, field: str, value: Any
) -> None:
    body: dict[str, Any] = {"model": gw_world.model("chat"), field: value}
    if path.endswith("responses"):
        body["input"] = "hi"
    else:
        body["messages"] = [{"role": "user", "content": "hi"}]
    error = _openai_error(await _gw(gateway, gw_world.keys["all"], path, orjson.dumps(body)), 400)
    assert error["param"] == field


async def test_gateway_deep_chat_body_is_400(gateway: Gateway, gw_world: GatewayWorld) -> None:
    deep = b"[" * 300 + b"]" * 300
    body = b'{"model": "' + gw_world.model("chat").encode() + b'", "messages": [{"role": "user", "content": ' + deep
    body += b"}]}"
    _openai_error(await _gw(gateway, gw_world.keys["all"], "/v1/chat/completions", body), 400)


async def test_gateway_lying_content_encoding_is_400(gateway: Gateway, gw_world: GatewayWorld) -> None:
    body = orjson.dumps({"model": gw_world.model("chat"), "messages": [{"role": "user", "content": "hi"}]})
    answer = await _gw(gateway, gw_world.keys["all"], "/v1/chat/completions", body, ((b"Content-Encoding", b"gzip"),))
    _openai_error(answer, 400)


async def test_gateway_non_utf8_bearer_is_401(gateway: Gateway) -> None:
    base = gateway.base_url.removesuffix("/v1")
    answer = await raw_request(base, "GET", "/v1/models", [(b"Authorization", b"Bearer sb_" + NOT_UTF8)])
    assert _openai_error(answer, 401)["code"] == "invalid_api_key"


async def test_gateway_non_utf8_header_value_is_not_500(gateway: Gateway, gw_world: GatewayWorld) -> None:
    base = gateway.base_url.removesuffix("/v1")
    headers = [(b"Authorization", f"Bearer {gw_world.keys['all']}".encode()), (b"OpenAI-Organization", NOT_UTF8)]
    answer = await raw_request(base, "GET", "/v1/models", headers)
    assert answer.status < 500
    _no_leak(answer.body)


async def test_gateway_oversized_headers_answer_an_openai_error(gateway: Gateway, gw_world: GatewayWorld) -> None:
    base = gateway.base_url.removesuffix("/v1")
    headers = [(b"Authorization", f"Bearer {gw_world.keys['all']}".encode()), (b"X-Big", b"a" * 10_000)]
    answer = await raw_request(base, "GET", "/v1/models", headers)
    assert answer.status in (400, 431)
    _openai_error(answer, answer.status)


async def test_gateway_malformed_header_answers_an_openai_error(gateway: Gateway) -> None:
    """aiohttp refuses it before any middleware runs: the gateway's protocol handler still answers OpenAI's shape."""
    base = gateway.base_url.removesuffix("/v1")
    answer = await raw_request(base, "GET", "/v1/models", [(b"Bad Header", b"x")])
    _openai_error(answer, 400)
    assert answer.headers.get("x-should-retry") == "false"


async def test_gateway_conversation_item_too_deep_for_the_management_api_is_400(
    gateway: Gateway, gw_world: GatewayWorld
) -> None:
    """An item deeper than 32 levels could be stored but never read back as a protobuf Struct: refused up front."""
    deep: Any = "leaf"
    for _ in range(40):
        deep = {"a": deep}
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi", "extra": deep}]}
    answer = await _gw(gateway, gw_world.keys["all"], "/v1/conversations", orjson.dumps({"items": [item]}))
    assert _openai_error(answer, 400)["param"] == "items[0]"
