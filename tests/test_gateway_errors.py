"""Gateway refusals and failures: OpenAI error bodies, statuses, x-should-retry, limits, and no leaks."""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import openai
import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.upstream import UPSTREAM_SECRET
from tests.gateway_fixtures import Gateway
from tests.gateway_world import KEYS, PROVIDER_KEY, GatewayWorld, service_account_key
from tests.world import must

pytestmark = ONE_BACKEND  # the gateway's HTTP semantics; storage is tested on both databases elsewhere

MESSAGES = [{"role": "user", "content": "hi"}]
MiB = 1024 * 1024


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def test_bad_key_is_401_invalid_api_key(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.AuthenticationError) as err:
        client(gateway, "sb_not-a-key").chat.completions.create(model=gw_world.model("chat"), messages=MESSAGES)
    assert err.value.status_code == 401
    assert err.value.code == "invalid_api_key"


async def test_missing_key_is_401(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/models") as resp:
        assert resp.status == 401
        body = await resp.json()
    assert body["error"]["code"] == "invalid_api_key"
    assert body["error"]["type"] == "authentication_error"


def test_every_response_names_its_request(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    raw = sdk.chat.completions.with_raw_response.create(model=gw_world.model("chat"), messages=MESSAGES)
    streamed = sdk.chat.completions.with_raw_response.create(
        model=gw_world.model("chat"), messages=MESSAGES, stream=True
    )
    list(streamed.parse())
    with pytest.raises(openai.NotFoundError) as err:
        sdk.chat.completions.create(model=gw_world.model("no-such-model"), messages=MESSAGES)
    ids = [raw.headers["x-request-id"], streamed.headers["x-request-id"], err.value.request_id]
    assert all(isinstance(i, str) and i.startswith("req_") for i in ids)
    assert len(set(ids)) == 3


@pytest.mark.parametrize("model", ["no-such-model", "private"])
def test_unknown_and_ungranted_models_are_the_same_404(gateway: Gateway, gw_world: GatewayWorld, model: str) -> None:
    name = gw_world.model(model)
    with pytest.raises(openai.NotFoundError) as err:
        client(gateway, gw_world.keys["all"]).chat.completions.create(model=name, messages=MESSAGES)
    assert err.value.code == "model_not_found"
    assert err.value.param == "model"
    assert err.value.message == f"Error code: 404 - The model '{name}' does not exist or you do not have access to it."


def test_service_account_key_reaches_only_its_grants(gateway: Gateway, gw_world: GatewayWorld) -> None:
    key = gw_world.keys["chat-only"]
    assert client(gateway, key).chat.completions.create(model=gw_world.model("chat"), messages=MESSAGES).choices
    # The alias is granted on its own; the direct target through another id is not.
    assert client(gateway, key).chat.completions.create(model=gw_world.model("hidden"), messages=MESSAGES).choices
    with pytest.raises(openai.NotFoundError):
        client(gateway, key).chat.completions.create(model=gw_world.model("alias-chat"), messages=MESSAGES)


def test_stream_to_unknown_model_fails_before_streaming(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.NotFoundError):
        client(gateway, gw_world.keys["all"]).chat.completions.create(model="nope", messages=MESSAGES, stream=True)


def test_unresolved_alias_is_a_clear_error(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(gateway, gw_world.keys["all"]).chat.completions.create(
            model=gw_world.model("dangling"), messages=MESSAGES
        )
    assert err.value.code == "model_unresolved"
    assert "unresolved" in err.value.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": MESSAGES}, "model"),
        ({"model": "chat", "messages": "hi"}, "messages"),
        ({"model": "chat", "messages": MESSAGES, "stream": "yes"}, "stream"),
        ({"model": "chat", "messages": MESSAGES, "stream_options": {"include_usage": True}}, "stream_options"),
        ({"model": "chat", "messages": MESSAGES, "stream": False, "stream_options": {}}, "stream_options"),
    ],
)
async def test_invalid_body_is_400_naming_the_field(
    gateway: Gateway, gw_world: GatewayWorld, body: dict[str, object], param: str
) -> None:
    if "model" in body:
        body = {**body, "model": gw_world.model("chat")}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp,
    ):
        assert resp.status == 400
        error = (await resp.json())["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"


async def test_non_json_body_is_400(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}", "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", data=b"{not json", headers=headers) as resp,
    ):
        assert resp.status == 400
        assert (await resp.json())["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("model", "status", "retry"),
    [("f500", 502, "true"), ("down", 502, "true"), ("f400", 502, "false"), ("f429", 429, "true")],
)
async def test_backend_failures_are_friendly_with_sensible_retry(
    gateway: Gateway, gw_world: GatewayWorld, model: str, status: int, retry: str
) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    body = {"model": gw_world.model(model), "messages": MESSAGES}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp,
    ):
        text = await resp.text()
        assert resp.status == status
        assert resp.headers["x-should-retry"] == retry
        assert "x-upstream-secret" not in resp.headers
    assert UPSTREAM_SECRET not in text and "boom" not in text
    assert "model backend" in text or "model provider" in text


def test_sdk_does_not_retry_permanent_backend_failures(gateway: Gateway, gw_world: GatewayWorld, fakes) -> None:  # type: ignore[no-untyped-def]
    before = len(fakes.openai.received)
    sdk = openai.OpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=2)
    with pytest.raises(openai.InternalServerError):
        sdk.chat.completions.create(model=gw_world.model("f400"), messages=MESSAGES)
    assert len(fakes.openai.received) == before + 1


@pytest.mark.parametrize("model", ["broken", "errstream"])
def test_stream_failing_midway_ends_with_an_error_event(gateway: Gateway, gw_world: GatewayWorld, model: str) -> None:
    stream = client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model(model), messages=MESSAGES, stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as err:
        for chunk in stream:
            received.append(chunk)
    assert received  # some chunks arrived before the failure
    assert UPSTREAM_SECRET not in str(err.value)
    assert "model backend" in err.value.message


async def test_oversized_body_is_refused_with_413_before_it_is_read(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}", "Content-Type": "application/json"}
    body = b'{"model": "x", "messages": [], "pad": "' + b"a" * (32 * MiB) + b'"}'
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", data=body, headers=headers) as resp,
    ):
        assert resp.status == 413
        error = (await resp.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert "32 MiB" in error["message"]


async def test_oversized_chunked_body_is_cut_at_the_limit(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}", "Content-Type": "application/json"}

    async def chunks():  # type: ignore[no-untyped-def]
        yield b'{"model": "x", "pad": "'
        for _ in range(40):
            yield b"a" * MiB
        yield b'"}'

    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/embeddings", data=chunks(), headers=headers) as resp,
    ):
        assert resp.status == 413


async def test_unknown_path_is_an_openai_404(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/nothing", headers=headers) as resp:
        assert resp.status == 404
        assert "error" in await resp.json()


def test_logs_never_carry_model_input_or_output(gateway: Gateway, gw_world: GatewayWorld) -> None:
    marker = "PROMPT-MARKER-7f3a"
    sdk = client(gateway, gw_world.keys["all"])
    for model in ("chat", "va-chat", "vb-chat", "f500", "f400", "broken", "errstream", "down"):
        with contextlib.suppress(openai.APIError):
            for _ in sdk.chat.completions.create(
                model=gw_world.model(model), messages=[{"role": "user", "content": marker}], stream=True
            ):
                pass
    log = gateway.log()
    assert "upstream" in log  # the failures were logged ...
    assert marker not in log  # ... without the input
    assert "Hello" not in log and UPSTREAM_SECRET not in log  # ... or output and upstream detail
    assert gw_world.keys["all"] not in log and PROVIDER_KEY not in log  # ... or credentials


async def _settles(gateway: Gateway, key: str, model: str, *, status: int) -> int:
    """Changes reach the gateway within its cache bound (1 s in tests): poll, bounded, for the outcome."""
    headers = {"Authorization": f"Bearer {key}"}
    body = {"model": model, "messages": MESSAGES}
    got = 0
    async with aiohttp.ClientSession() as http:
        for _ in range(60):
            async with http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp:
                got = resp.status
            if got == status:
                break
            await asyncio.sleep(0.1)
    return got


async def test_disabled_key_and_withdrawn_grant_stop_working(
    server: Server, gateway: Gateway, gw_world: GatewayWorld
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    admin = gw_world.tokens["admin"]
    key = await service_account_key(connect, gw_world, admin, "short-lived", ["chat", "alias-chat"])
    key_id = gw_world.key_ids["short-lived"]
    assert await _settles(gateway, key, gw_world.model("alias-chat"), status=200) == 200
    _kind, name = gw_world.names[gw_world.model("alias-chat")]
    grant = {"kind": "RESOURCE_KIND_MODEL_ALIAS", "name": name}
    body = {"tenantId": gw_world.tenant_id, "apiKeyId": key_id, "grant": grant}
    must(await connect.call(f"{KEYS}/RemoveApiKeyGrant", body, token=admin))
    assert await _settles(gateway, key, gw_world.model("alias-chat"), status=404) == 404
    assert await _settles(gateway, key, gw_world.model("chat"), status=200) == 200
    body = {"tenantId": gw_world.tenant_id, "apiKeyId": key_id}
    must(await connect.call(f"{KEYS}/DisableApiKey", body, token=admin))
    assert await _settles(gateway, key, gw_world.model("chat"), status=401) == 401


def test_sdk_sees_413_for_an_oversized_request(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.APIStatusError) as err:
        client(gateway, gw_world.keys["all"]).embeddings.create(model=gw_world.model("embed"), input="a" * (33 * MiB))
    assert err.value.status_code == 413
    assert err.value.code == "request_too_large"
