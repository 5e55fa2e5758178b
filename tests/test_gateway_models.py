"""GET /v1/models and /v1/models/{id}: what the key can use, with capabilities and filters."""

from __future__ import annotations

import aiohttp
import openai
import pytest

from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def ours(world: GatewayWorld, ids: list[str]) -> set[str]:
    """Our world's models among ids, without the tag (other tests' worlds may share the database)."""
    suffix = f"-{world.tag}"
    return {i.removesuffix(suffix) for i in ids if i.endswith(suffix)}


def test_list_shows_usable_models_and_hides_unlisted_aliases(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["all"]).models.list()
    names = ours(gw_world, [m.id for m in page.data])
    assert {"chat", "embed", "rerank", "whisper", "va-chat", "vb-chat", "cc-chat", "alias-chat"} <= names
    assert "hidden" not in names  # unlisted, yet invokable (see test_gateway_chat)
    assert "private" not in names  # not shared with the key's tenant
    assert "dangling" not in names


def test_list_for_a_key_with_grants_shows_only_them(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["chat-only"]).models.list()
    assert ours(gw_world, [m.id for m in page.data]) == {"chat"}


def test_items_carry_capabilities(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["all"]).models.list()
    by_id = {m.id: m.model_dump() for m in page.data}
    chat = by_id[gw_world.model("chat")]
    assert chat["object"] == "model"
    assert chat["capabilities"] == {"task_type": "text-generation", "input_modalities": ["text", "image"]}
    assert by_id[gw_world.model("embed")]["capabilities"]["task_type"] == "embedding"
    assert by_id[gw_world.model("alias-chat")]["capabilities"] == chat["capabilities"]


@pytest.mark.parametrize(
    ("query", "expected_in", "expected_out"),
    [
        ("input_modalities=image", {"chat", "alias-chat"}, {"embed", "whisper"}),
        ("input_modalities[]=audio", {"whisper"}, {"chat"}),
        ("input_modalities=text,image", {"chat"}, {"embed"}),
        ("task_type=embedding", {"embed", "vb-embed"}, {"chat"}),
        ("task_type=speech_to_text", {"whisper"}, {"chat"}),
    ],
)
async def test_filters(
    gateway: Gateway, gw_world: GatewayWorld, query: str, expected_in: set[str], expected_out: set[str]
) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/models?{query}", headers=headers) as resp:
        assert resp.status == 200
        names = ours(gw_world, [m["id"] for m in (await resp.json())["data"]])
    assert expected_in <= names
    assert not expected_out & names


async def test_unknown_filter_value_is_400(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    url = f"{gateway.base_url}/models?input_modalities=smell"
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["param"] == "input_modalities"


def test_retrieve_one_model_including_unlisted_alias(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    assert sdk.models.retrieve(gw_world.model("chat")).id == gw_world.model("chat")
    assert sdk.models.retrieve(gw_world.model("hidden")).id == gw_world.model("hidden")
    for missing in ("private", "nope"):
        with pytest.raises(openai.NotFoundError) as err:
            sdk.models.retrieve(gw_world.model(missing))
        assert err.value.code == "model_not_found"
