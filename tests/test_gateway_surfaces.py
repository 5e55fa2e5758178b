"""Embeddings (float and base64), rerank and transcriptions through the gateway, with query prefixes."""

from __future__ import annotations

import base64
import io
from array import array
from typing import Any

import aiohttp
import openai
import pytest

from gateway.surfaces.embeddings import MAX_INPUTS
from tests.conftest import ONE_BACKEND
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld

pytestmark = ONE_BACKEND  # the gateway's HTTP semantics; storage is tested on both databases elsewhere


def decode(b64: str) -> list[float]:
    return array("f", base64.b64decode(b64)).tolist()


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


@pytest.mark.parametrize("encoding", ["float", "base64", None])
def test_embeddings_with_query_prefix(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, encoding: str | None
) -> None:
    kwargs = {"encoding_format": encoding} if encoding else {}
    result = client(gateway, gw_world.keys["all"]).embeddings.create(
        model=gw_world.model("embed"),
        input=["hello", "hi"],
        extra_body={"input_type": "query"},
        **kwargs,  # type: ignore[arg-type]
    )
    sent = fakes.openai.last().json
    assert sent is not None
    assert sent["input"] == ["query: hello", "query: hi"]
    assert "input_type" not in sent  # consumed by the gateway, never forwarded
    assert sent["model"] == "served-embed"
    assert sent["encoding_format"] == (encoding or "base64")  # the SDK asks for base64 by default
    vectors = [decode(d.embedding) if isinstance(d.embedding, str) else d.embedding for d in result.data]
    assert vectors == [[12.0, 0.5, -1.0, 0.0], [9.0, 0.5, -1.0, 1.0]]
    assert result.usage.prompt_tokens == len("query: hello") + len("query: hi")


@pytest.mark.parametrize("input_type", [None, "document", "passage"])
def test_documents_are_never_prefixed(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, input_type: str | None
) -> None:
    extra = {"input_type": input_type} if input_type else {}
    client(gateway, gw_world.keys["all"]).embeddings.create(
        model=gw_world.model("embed"), input=["a doc"], extra_body=extra
    )
    sent = fakes.openai.last().json
    assert sent is not None
    assert sent["input"] == ["a doc"]
    assert "input_type" not in sent


@pytest.mark.parametrize("input_type", ["poem", ["query"], {"type": "query"}])
def test_unknown_input_type_names_the_field(gateway: Gateway, gw_world: GatewayWorld, input_type: object) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(gateway, gw_world.keys["all"]).embeddings.create(
            model=gw_world.model("embed"), input="x", extra_body={"input_type": input_type}
        )
    assert err.value.param == "input_type"


def test_more_inputs_than_openai_allows_are_refused_before_the_model(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    sent = len(fakes.openai.received)
    with pytest.raises(openai.BadRequestError) as err:
        sdk.embeddings.create(model=gw_world.model("embed"), input=["x"] * (MAX_INPUTS + 1))
    assert err.value.param == "input" and str(MAX_INPUTS) in err.value.message
    assert len(fakes.openai.received) == sent
    assert len(sdk.embeddings.create(model=gw_world.model("embed"), input=["x"] * MAX_INPUTS).data) >= 1


def test_empty_query_prefix_disables_it(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    client(gateway, gw_world.keys["all"]).embeddings.create(
        model=gw_world.model("embed-noprefix"), input="hello", extra_body={"input_type": "query"}
    )
    assert fakes.openai.last().json["input"] == "hello"  # type: ignore[index]


def test_embeddings_on_vendor_b(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    result = client(gateway, gw_world.keys["all"]).embeddings.create(model=gw_world.model("vb-embed"), input="abc")
    assert result.data[0].embedding == [3.0, 0.5, -1.0, 0.0]
    assert fakes.azure.last().path == "/openai/deployments/vb-embed-deploy/embeddings"


async def test_base64_is_encoded_by_the_gateway_when_the_upstream_sends_floats(
    gateway: Gateway, gw_world: GatewayWorld
) -> None:
    body = {"model": gw_world.model("embed-floats"), "input": "xy", "encoding_format": "base64"}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/embeddings", json=body, headers=headers) as resp,
    ):
        data = (await resp.json())["data"]
    assert decode(data[0]["embedding"]) == [2.0, 0.5, -1.0, 0.0]


def test_embedding_input_is_validated(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(gateway, gw_world.keys["all"]).embeddings.create(model=gw_world.model("embed"), input=[])
    assert err.value.param == "input"


@pytest.mark.parametrize(
    "value",
    [[None], [{"text": "a"}], [1.5], [["a"]], [True], [-1], ["a", 1], [[1], []], "", ["a", ""], {"text": "a"}],
    ids=repr,
)
async def test_inputs_outside_openais_shapes_are_refused_before_the_model(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, value: object
) -> None:
    """`input` is a non-empty string or a non-empty array of non-empty strings, token ids or token-id arrays. Others
    went upstream, whose refusal came back as a 502 blaming the backend."""
    sent = len(fakes.openai.received)
    status, error = await _refused(gateway, gw_world, "embeddings", {"model": gw_world.model("embed"), "input": value})
    assert (status, error["param"]) == (400, "input"), error
    assert len(fakes.openai.received) == sent


@pytest.mark.parametrize("dimensions", [0, -3, 1.5, "8", True])
async def test_dimensions_must_be_a_positive_integer(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, dimensions: object
) -> None:
    sent = len(fakes.openai.received)
    payload = {"model": gw_world.model("embed"), "input": "x", "dimensions": dimensions}
    status, error = await _refused(gateway, gw_world, "embeddings", payload)
    assert (status, error["param"]) == (400, "dimensions"), error
    assert len(fakes.openai.received) == sent


async def _refused(gateway: Gateway, gw_world: GatewayWorld, path: str, body: object) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/{path}", json=body, headers=headers) as resp,
    ):
        return resp.status, (await resp.json())["error"]


def test_chat_model_refuses_embeddings(gateway: Gateway, gw_world: GatewayWorld) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(gateway, gw_world.keys["all"]).embeddings.create(model=gw_world.model("chat"), input="x")
    assert err.value.param == "model"


async def test_rerank_with_query_prefix(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    body = {
        "model": gw_world.model("rerank"),
        "query": "capital of France",
        "documents": ["Berlin is in Germany", "Paris is the capital of France"],
        "top_n": 1,
    }
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/rerank", json=body, headers=headers) as resp,
    ):
        assert resp.status == 200
        result = await resp.json()
    assert [r["index"] for r in result["results"]] == [1]
    sent = fakes.openai.last()
    assert sent.path == "/v1/rerank"
    assert sent.json == {**body, "model": "served-rerank", "query": "q: capital of France"}


async def test_rerank_validation(gateway: Gateway, gw_world: GatewayWorld) -> None:
    body = {"model": gw_world.model("rerank"), "query": "q", "documents": "not a list"}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/rerank", json=body, headers=headers) as resp,
    ):
        assert resp.status == 400
        assert (await resp.json())["error"]["param"] == "documents"


@pytest.mark.parametrize("return_documents", [False, True, None])
async def test_rerank_results_carry_documents_unless_told_not_to(
    gateway: Gateway, gw_world: GatewayWorld, return_documents: bool | None
) -> None:
    """With `return_documents: false` no result carries its document, though the upstream (vLLM has no such field)
    sent them all."""
    body: dict[str, Any] = {"model": gw_world.model("rerank"), "query": "a", "documents": ["a b", "c"]}
    if return_documents is not None:
        body["return_documents"] = return_documents
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/rerank", json=body, headers=headers) as resp,
    ):
        assert resp.status == 200
        results = (await resp.json())["results"]
    assert len(results) == 2
    assert all(("document" in r) is (return_documents is not False) for r in results), results


async def test_rerank_return_documents_must_be_a_boolean(gateway: Gateway, gw_world: GatewayWorld) -> None:
    body = {"model": gw_world.model("rerank"), "query": "a", "documents": ["a"], "return_documents": "no"}
    status, error = await _refused(gateway, gw_world, "rerank", body)
    assert (status, error["param"]) == (400, "return_documents"), error


def _audio() -> tuple[str, io.BytesIO, str]:
    return ("speech.wav", io.BytesIO(b"RIFF" + b"\0" * 2048), "audio/wav")


def test_transcription_json(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    result = client(gateway, gw_world.keys["all"]).audio.transcriptions.create(
        model=gw_world.model("whisper"), file=_audio(), language="en", temperature=0.2
    )
    assert result.text == "hello world"
    sent = fakes.openai.last()
    assert sent.path == "/v1/audio/transcriptions"
    assert sent.form["model"] == "served-whisper"
    assert sent.form["language"] == "en"
    assert sent.form["file"] == {"filename": "speech.wav", "size": 2052}


@pytest.mark.parametrize(("fmt", "start"), [("text", "hello world"), ("srt", "1\n00:00"), ("vtt", "WEBVTT")])
def test_transcription_text_formats(gateway: Gateway, gw_world: GatewayWorld, fmt: str, start: str) -> None:
    result = client(gateway, gw_world.keys["all"]).audio.transcriptions.create(
        model=gw_world.model("whisper"),
        file=_audio(),
        response_format=fmt,  # type: ignore[call-overload]
    )
    assert isinstance(result, str) and result.startswith(start)


def test_transcription_verbose_json(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    result = client(gateway, gw_world.keys["all"]).audio.transcriptions.create(
        model=gw_world.model("whisper"),
        file=_audio(),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert result.segments is not None and result.segments[0].text == "hello world"
    assert result.words is not None and result.words[0].word == "hello"


async def test_transcription_over_128_mib_is_refused(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {
        "Authorization": f"Bearer {gw_world.keys['all']}",
        "Content-Type": "multipart/form-data; boundary=x",
        "Content-Length": str(128 * 1024 * 1024 + 1),
    }

    async def body():  # type: ignore[no-untyped-def]
        yield b"--x\r\n"

    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/audio/transcriptions", data=body(), headers=headers) as resp,
    ):
        assert resp.status == 413
        assert "128 MiB" in (await resp.json())["error"]["message"]


async def test_a_transcription_text_field_in_its_declared_charset_reaches_the_upstream_intact(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    """A text field's part may declare its charset (`curl -F 'prompt=...;type=text/plain;charset=latin1'`); it was
    decoded as UTF-8 with replacement characters, so the upstream got "caf\ufffd" for "café"."""
    parts = [
        (b'name="model"', b"", gw_world.model("whisper").encode()),
        (b'name="file"; filename="speech.wav"', b"Content-Type: audio/wav\r\n", b"RIFF" + b"\0" * 64),
        (b'name="prompt"', b"Content-Type: text/plain; charset=iso-8859-1\r\n", "café".encode("latin-1")),
    ]
    body = b"".join(
        b"--sb\r\nContent-Disposition: form-data; " + names + b"\r\n" + headers + b"\r\n" + value + b"\r\n"
        for names, headers, value in parts
    )
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}", "Content-Type": "multipart/form-data; boundary=sb"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/audio/transcriptions", data=body + b"--sb--\r\n", headers=headers) as resp,
    ):
        assert resp.status == 200, await resp.text()
    assert fakes.openai.last().form["prompt"] == "café"
