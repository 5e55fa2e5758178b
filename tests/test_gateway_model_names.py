"""Every gateway answer's `model` is the id the client asked for (a publicModelId or an alias), never the
upstream's internal id, which the fake upstream echoes back (`served-chat`, `served-embed`, …)."""

from __future__ import annotations

import io
from typing import Any

import aiohttp
import openai
import pytest

from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


@pytest.mark.parametrize("label", ["chat", "alias-chat", "cc-chat", "vb-chat"])
def test_chat_answers_with_the_id_asked_for(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, label: str) -> None:
    asked = gw_world.model(label)
    result = client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=asked, messages=[{"role": "user", "content": "hi"}]
    )
    assert result.model == asked
    assert result.choices[0].message.content is not None
    assert asked not in result.choices[0].message.content  # the upstream was sent (and echoed) its own id


@pytest.mark.parametrize("include_usage", [False, True])
@pytest.mark.parametrize("label", ["chat", "alias-chat", "crlf", "snapshot"])  # snapshot: not the id it was sent
def test_every_streamed_chunk_names_the_id_asked_for(
    gateway: Gateway, gw_world: GatewayWorld, label: str, include_usage: bool
) -> None:
    asked = gw_world.model(label)
    options: Any = {"include_usage": True} if include_usage else openai.NOT_GIVEN
    chunks = list(
        client(gateway, gw_world.keys["all"]).chat.completions.create(
            model=asked, messages=[{"role": "user", "content": "hi"}], stream=True, stream_options=options
        )
    )
    assert len(chunks) > 2
    assert {chunk.model for chunk in chunks} == {asked}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("Hello from ")  # the content itself is passed through untouched
    assert (chunks[-1].usage is not None) == include_usage


@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_embeddings_answer_with_the_id_asked_for(gateway: Gateway, gw_world: GatewayWorld, encoding: str) -> None:
    asked = gw_world.model("embed")
    result = client(gateway, gw_world.keys["all"]).embeddings.create(
        model=asked,
        input="hello",
        encoding_format=encoding,  # type: ignore[arg-type]
    )
    assert result.model == asked
    assert result.data[0].embedding  # floats, or base64 when asked for explicitly


async def test_rerank_answers_with_the_id_asked_for(gateway: Gateway, gw_world: GatewayWorld) -> None:
    asked = gw_world.model("rerank")
    body = {"model": asked, "query": "capital of France", "documents": ["Paris is the capital of France"]}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/rerank", json=body, headers=headers) as resp,
    ):
        assert resp.status == 200
        result = await resp.json()
    assert result["model"] == asked
    assert result["results"][0]["index"] == 0


async def test_transcription_answers_with_the_id_asked_for(gateway: Gateway, gw_world: GatewayWorld) -> None:
    asked = gw_world.model("whisper")
    form = aiohttp.FormData()
    form.add_field("model", asked)
    form.add_field("file", io.BytesIO(b"RIFF" + b"\0" * 64), filename="speech.wav", content_type="audio/wav")
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/audio/transcriptions", data=form, headers=headers) as resp,
    ):
        assert resp.status == 200
        result = await resp.json()
    assert result == {"text": "hello world", "usage": result["usage"], "model": asked}
