"""NUL in every string a gateway request carries, on both databases: PostgreSQL's text cannot hold it, and its
driver's refusal was a 500 with a traceback wherever a client's string reached a statement (`previous_response_id`,
a `file_search` tool's RAG ids, an MCP tool's `server_label`, a RAG file's `content_type`, a RAG listing's cursor,
a transcription's `model`). Every id-like string of every JSON body, every query parameter and every form field is
refused with 400 naming it, and the gateway logs nothing at ERROR; the text a model reads or writes may hold NUL,
and is stored and read back as sent.

The bodies below are valid requests with every string field the gateway reads; `TEXT` marks model text. Each other
string, and each free object key, is sent holding NUL in turn (`cases`); `test_every_json_route_has_a_template`
keeps the table in step with the gateway's routes.
"""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
from sqlalchemy import select

from gateway.app import make_app
from server.settings import load_settings
from server.store.models import AuditEventRow, RagChunkRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rag_documents import pdf
from tests.rag_helpers import new_rag
from tests.rag_http import multipart, personal_all_key
from tests.world import make_world

NUL = "\x00"
TEXT = "<model text>"  # sent as "hi" in the refusal cases, holding NUL in the acceptance ones
CHAT, EMBED, RERANK, WHISPER = "{chat}", "{embed}", "{rerank}", "{whisper}"
RAG, FILE, CONVERSATION, RESPONSE = "{rag}", "{file}", "{conversation}", "{response}"

# One valid body per JSON route, holding every string field its handler reads.
TEMPLATES: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("POST", "/v1/chat/completions"): [
        {
            "model": CHAT,
            "messages": [
                {"role": "system", "content": TEXT},
                {"role": "user", "name": "ann", "content": [{"type": "text", "text": TEXT}]},
                {
                    "role": "assistant",
                    "content": TEXT,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": TEXT}}],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": TEXT},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}],
            "tool_choice": "auto",
            "stop": ["END"],
            "user": "user-1",
            "response_format": {"type": "text"},
            "metadata": {"k": "v"},
        }
    ],
    ("POST", "/v1/responses"): [
        {
            "model": CHAT,
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TEXT}]},
                {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": TEXT},
                {"type": "function_call_output", "call_id": "call_1", "output": TEXT},
            ],
            "instructions": TEXT,
            "previous_response_id": RESPONSE,
            "tools": [
                {"type": "file_search", "vector_store_ids": [RAG]},
                {
                    "type": "mcp",
                    "server_label": "srv",
                    "server_url": "https://mcp.example/mcp",
                    "allowed_tools": ["add"],
                    "headers": {"X-Team": "t"},
                    "authorization": "token",
                    "require_approval": "never",
                },
                {"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}},
            ],
            "tool_choice": "auto",
            "include": ["file_search_call.results"],
            "text": {"format": {"type": "text"}},
            "metadata": {"k": "v"},
            "user": "user-1",
        },
        {"model": CHAT, "input": TEXT, "conversation": CONVERSATION},
        {"model": CHAT, "input": TEXT, "conversation": {"id": CONVERSATION}},
    ],
    ("POST", "/v1/embeddings"): [{"model": EMBED, "input": [TEXT, TEXT], "encoding_format": "float", "user": "u"}],
    ("POST", "/v1/rerank"): [{"model": RERANK, "query": TEXT, "documents": [TEXT, {"text": TEXT}]}],
    ("POST", "/v1/conversations"): [
        {
            "metadata": {"k": "v"},
            "items": [
                {"type": "message", "role": "user", "content": TEXT},
                {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "s", "name": "add", "arguments": TEXT},
            ],
        }
    ],
    ("POST", "/v1/conversations/{id}"): [{"metadata": {"k": "v"}}],
    ("POST", "/v1/conversations/{id}/items"): [
        {
            "items": [
                {"type": "function_call_output", "call_id": "c_1", "output": [{"type": "input_text", "text": TEXT}]}
            ]
        }
    ],
    ("POST", "/rag/{rag_id}/files/content"): [
        {
            "files": [
                {
                    "filename": "a.txt",
                    "content": TEXT,
                    "content_type": "text/plain",
                    "external_id": "ext-1",
                    "metadata": {"k": "v", "tags": ["a", "b"]},
                }
            ]
        }
    ],
    ("POST", "/rag/{rag_id}/internal/files"): [
        {"external_id": "ext-2", "text": TEXT, "filename": "b.txt", "title": "B", "metadata": {"k": "v"}}
    ],
    ("PATCH", "/rag/{rag_id}/files/{file_id}"): [{"metadata": {"k": "v"}}],
    ("POST", "/rag/{rag_id}/context"): [{"query": TEXT, "filters": {"k": "v", "n": {"in": ["a"]}}}],
}
# Routes served by the same handler as one above.
ALIASES = {
    ("POST", "/rerank"): ("POST", "/v1/rerank"),
    ("POST", "/v2/rerank"): ("POST", "/v1/rerank"),
    ("POST", "/rag/{rag_id}/content"): ("POST", "/rag/{rag_id}/files/content"),
    ("PATCH", "/rag/{rag_id}/content/{file_id}"): ("PATCH", "/rag/{rag_id}/files/{file_id}"),
}
# Routes whose bodies are not JSON (gateway.multipart, the MCP SDK's JSON-RPC): tested apart below.
NOT_JSON = {("POST", "/v1/audio/transcriptions"), ("POST", "/rag/{rag_id}/files"), ("*", "/rag/{rag_id}/mcp")}

# Every query parameter a GET route reads, with a valid value; the others are sent one they do not read.
QUERIES: dict[str, dict[str, str]] = {
    "/v1/models": {"task_type": "text-generation", "input_modalities": "text"},
    "/v1/conversations/{id}/items": {"after": "msg_1", "limit": "5", "order": "asc", "include": "x"},
    "/v1/responses/{response_id}/input_items": {"after": "msg_1", "limit": "5", "order": "asc"},
    "/rag/{rag_id}/files": {
        "after": "x",
        "limit": "5",
        "status": "ready",
        "include_total": "true",
        "metadata.k": "v",
        "filters": '{"k": "v"}',
        "unknown": "v",
    },
}


@dataclass(frozen=True)
class Case:
    method: str
    route: str
    body: Any
    param: str

    def __str__(self) -> str:
        return f"{self.method} {self.route} {self.param!r}"


def _with_nul_at(value: Any, path: str = "") -> Iterator[tuple[Any, str]]:
    """`value` once for each string in it (model text aside) and each key of a free object (metadata, headers,
    filters), that one holding NUL; with its path."""
    if isinstance(value, str):
        if value != TEXT:
            yield value + NUL + "x", path
    elif isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            for changed, where in _with_nul_at(item, here):
                yield {**value, key: changed}, where
        if path.rsplit(".", 1)[-1] in ("metadata", "headers", "filters"):
            key = next(iter(value))
            bad = key + NUL + "x"
            yield {bad if k == key else k: v for k, v in value.items()}, f"{path}.{bad}"
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for changed, where in _with_nul_at(item, f"{path}[{index}]"):
                yield [*value[:index], changed, *value[index + 1 :]], where


def _query_cases() -> list[tuple[str, str]]:
    app = make_app(load_settings({}))
    gets = {route.resource.canonical for route in app.router.routes() if route.method == "GET" and route.resource}
    assert set(QUERIES) <= gets
    return [(route, name) for route in sorted(gets) for name in QUERIES.get(route, {"unknown": "v"})]


def _cases() -> list[Case]:
    return [
        Case(method, route, body, param)
        for (method, route), templates in TEMPLATES.items()
        for template in templates
        for body, param in _with_nul_at(template)
    ]


@dataclass
class World:
    base: str
    key: str
    values: dict[str, str]  # placeholder -> the real id or model

    def fill(self, value: Any, text: str = "hi") -> Any:
        """`value` with the placeholders of ids and models replaced, model text as `text`."""
        if isinstance(value, str):
            if value == TEXT:
                return text
            for placeholder, real in self.values.items():
                value = value.replace(placeholder, real)
            return value
        if isinstance(value, dict):
            return {self.fill(k, text): self.fill(v, text) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v, text) for v in value]
        return value

    def path(self, route: str) -> str:
        ids = {"rag_id": self.values[RAG], "file_id": self.values[FILE], "id": self.values[CONVERSATION]}
        ids |= {"response_id": self.values[RESPONSE], "model": self.values[CHAT], "item_id": "msg_1"}
        return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], route)

    async def send(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.key}"}
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, self.base + path, headers=headers, **kwargs) as resp,
        ):
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None


@pytest_asyncio.fixture(scope="session")
async def nul_world(server: Server, gateway: Gateway, gw_world: GatewayWorld) -> World:
    """A tenant's editor (whose personal all-resources key may use gw_world's shared models) with a RAG holding a
    file, a conversation and a stored response."""
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    key = await personal_all_key(connect, people.tokens["editor"], people.tenant_id)
    rag = await new_rag(
        connect, people.tokens["editor"], people.tenant_id, gw_world.model("embed"), name=f"nul-{secrets.token_hex(3)}"
    )
    values = {CHAT: gw_world.model("chat"), EMBED: gw_world.model("embed"), RERANK: gw_world.model("rerank")}
    values |= {WHISPER: gw_world.model("whisper"), RAG: rag["id"]}
    world = World(gateway.base_url.removesuffix("/v1"), key, values)
    status, uploaded = await world.send(
        "POST", f"/rag/{rag['id']}/files/content", json={"files": [{"filename": "a.txt", "content": "lighthouse"}]}
    )
    assert status == 201, uploaded
    status, conversation = await world.send("POST", "/v1/conversations", json={})
    assert status == 200, conversation
    status, response = await world.send("POST", "/v1/responses", json={"model": values[CHAT], "input": "hi"})
    assert status == 200, response
    values |= {FILE: uploaded["data"][0]["id"], CONVERSATION: conversation["id"], RESPONSE: response["id"]}
    return world


def _refused(status: int, body: Any, param: str) -> None:
    assert status == 400, body
    error = body["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    assert "NUL" in error["message"], error


def test_every_json_route_has_a_template() -> None:
    app = make_app(load_settings({}))
    served = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method in ("POST", "PATCH", "PUT", "*")
    }
    assert served == set(TEMPLATES) | set(ALIASES) | NOT_JSON


@pytest.mark.parametrize("case", _cases(), ids=str)
async def test_nul_in_any_id_of_a_json_body_is_400_naming_it(case: Case, nul_world: World, gateway: Gateway) -> None:
    with gateway.logs_no_error():
        status, body = await nul_world.send(case.method, nul_world.path(case.route), json=nul_world.fill(case.body))
    _refused(status, body, case.param)


@pytest.mark.parametrize(("route", "name"), _query_cases())
async def test_nul_in_any_query_parameter_is_400_naming_it(
    route: str, name: str, nul_world: World, gateway: Gateway
) -> None:
    params = {**QUERIES.get(route, {}), name: "a" + NUL + "b"}
    with gateway.logs_no_error():
        status, body = await nul_world.send("GET", nul_world.path(route), params=params)
    _refused(status, body, name)


async def test_a_rag_listing_cursor_hiding_nul_is_400(nul_world: World, gateway: Gateway) -> None:
    """The cursor is opaque base64: a NUL inside it passed every check on the way in."""
    cursor = base64.urlsafe_b64encode(orjson.dumps(["2026-01-01T00:00:00+00:00", "file_" + NUL])).decode()
    with gateway.logs_no_error():
        status, body = await nul_world.send("GET", nul_world.path("/rag/{rag_id}/files"), params={"after": cursor})
    assert status == 400 and body["error"]["param"] == "after", body


@pytest.mark.parametrize(("field", "value"), [("model", WHISPER), ("language", "en"), ("response_format", "json")])
async def test_nul_in_a_transcription_form_field_is_400_naming_it(
    field: str, value: str, nul_world: World, gateway: Gateway
) -> None:
    fields = {"model": WHISPER, "language": "en", "response_format": "json", field: "a" + NUL + value}
    form = aiohttp.FormData()
    for name, text in fields.items():
        form.add_field(name, nul_world.fill(text))
    form.add_field("file", b"RIFF0000WAVE", filename="a.wav", content_type="audio/wav")
    with gateway.logs_no_error():
        status, body = await nul_world.send("POST", "/v1/audio/transcriptions", data=form)
    _refused(status, body, field)


async def test_nul_in_a_rag_upload_form_s_metadata_is_400(nul_world: World, gateway: Gateway) -> None:
    form = multipart([("a.txt", b"lighthouse", "text/plain")], metadata=orjson.dumps({"k": "a" + NUL}).decode())
    with gateway.logs_no_error():
        status, body = await nul_world.send("POST", nul_world.path("/rag/{rag_id}/files"), data=form)
    _refused(status, body, "metadata.k")


async def test_model_text_may_hold_nul_and_is_kept_as_sent(nul_world: World, gateway: Gateway) -> None:
    """Stored in JSON columns (PostgreSQL's `json` keeps the `\\u0000` escape), read back, and continued from."""
    text = "before" + NUL + "after"
    chat = nul_world.values[CHAT]
    with gateway.logs_no_error():
        status, body = await nul_world.send(
            "POST", "/v1/chat/completions", json={"model": chat, "messages": [{"role": "user", "content": text}]}
        )
        assert status == 200, body
        status, embedded = await nul_world.send(
            "POST", "/v1/embeddings", json={"model": nul_world.values[EMBED], "input": [text]}
        )
        assert status == 200, embedded
        status, first = await nul_world.send("POST", "/v1/responses", json={"model": chat, "input": text})
        assert status == 200, first
        status, items = await nul_world.send("GET", f"/v1/responses/{first['id']}/input_items")
        assert status == 200 and items["data"][0]["content"][0]["text"] == text, items
        follow = {"model": chat, "input": text, "previous_response_id": first["id"]}
        status, second = await nul_world.send("POST", "/v1/responses", json=follow)
        assert status == 200, second
        status, conversation = await nul_world.send(
            "POST", "/v1/conversations", json={"items": [{"type": "message", "role": "user", "content": text}]}
        )
        assert status == 200, conversation
        turn = {"model": chat, "input": text, "conversation": conversation["id"]}
        status, answered = await nul_world.send("POST", "/v1/responses", json=turn)
        assert status == 200, answered
        status, listed = await nul_world.send("GET", f"/v1/conversations/{conversation['id']}/items?order=asc")
        assert status == 200 and [i["content"][0]["text"] for i in listed["data"][:2]] == [text, text], listed
        status, found = await nul_world.send("POST", nul_world.path("/rag/{rag_id}/context"), json={"query": text})
        assert status == 200, found


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("utf16.txt", b"\xff\xfe" + "light\x00house".encode("utf-16-le")),
        ("nul.pdf", pdf("lighthouse").replace(b"(lighthouse)", b"(light\\000house)")),
    ],
)
async def test_a_file_whose_text_holds_nul_is_indexed_without_it(
    filename: str, data: bytes, nul_world: World, gateway: Gateway
) -> None:
    """Its text is parsed, not sent: a UTF-16 file or a PDF can decode to NUL, which no chunk can be stored with."""
    with gateway.logs_no_error():
        status, body = await nul_world.send(
            "POST", nul_world.path("/rag/{rag_id}/files"), data=multipart([(filename, data, None)])
        )
    assert status == 201, body
    async with gateway.db.read() as session:
        texts = list(
            await session.scalars(select(RagChunkRow.text).where(RagChunkRow.file_id == body["data"][0]["id"]))
        )
    assert texts == ["lighthouse"]


async def test_a_content_type_longer_than_its_column_is_400(nul_world: World, gateway: Gateway) -> None:
    item = {"filename": "a.txt", "content": "lighthouse", "content_type": "text/plain; x=" + "y" * 200}
    with gateway.logs_no_error():
        status, body = await nul_world.send(
            "POST", nul_world.path("/rag/{rag_id}/files/content"), json={"files": [item]}
        )
    assert status == 400 and body["error"]["param"] == "files[0].content_type", body


async def test_a_refused_key_on_a_path_holding_nul_is_audited(nul_world: World, gateway: Gateway) -> None:
    """The refusal is recorded with the path it named (NUL as U+FFFD): PostgreSQL refused the row, and with it the
    whole batch of audit events, logged at ERROR."""
    marker = secrets.token_hex(4)
    with gateway.logs_no_error():
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{nul_world.base}/v1/responses/{marker}%00x", headers={"Authorization": "Bearer sk-no"}) as resp,
        ):
            assert resp.status == 401
        for _ in range(100):
            async with gateway.db.read() as session:
                names = list(
                    await session.scalars(
                        select(AuditEventRow.resource_name).where(AuditEventRow.resource_name.contains(marker))
                    )
                )
            if names:
                break
            await asyncio.sleep(0.1)
    assert names == [f"/v1/responses/{marker}\ufffdx"]
