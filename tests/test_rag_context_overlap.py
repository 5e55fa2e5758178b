"""A hybrid /context reads its lexical list, and a filtered one the files its filter allows, while the query is
being embedded (gateway.rag.service.context), on SQLite and PostgreSQL: the embedding upstream here answers a query
only once the gateway's database has run the statement awaited, or after a long wait, which the test reports. And
when the embedding fails, the answer is the usual 502 and the next search works (the reads are left to finish, not
cut off on their pooled connection)."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from aiohttp import web
from sqlalchemy import event

from gateway.app import make_app
from gateway.context import DB
from server.dev.models import QUERY_PREFIX
from server.settings import load_settings
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import fixed_embeddings
from tests.gateway_fixtures import Fakes, gateway_env
from tests.rag_helpers import new_rag
from tests.rag_http import call, personal_all_key, register_e5
from tests.world import make_world

# How long the stand-in holds a query embedding waiting for the lexical statement: far beyond what the read takes,
# so only a gateway that reads the list after the embedding runs into it.
HOLD_SECONDS = 20
# The stand-in's vectors are all alike, so the lexical list decides the order: its first hit scores at least 0.75.
LEXICAL_FIRST = {"dense": 1, "lexical": 3}
# What the statements awaited hold: SQLite's FTS5 or PostgreSQL's BM25 postings; the files' metadata, as text.
LEXICAL = (" MATCH ", "rag_term")
METADATA = ("CAST(rag_files.metadata AS",)


@dataclass
class _GatedEmbedder:
    """/v1/embeddings (the fakes' fixed vectors): passages at once; a query once `read` is set (or HOLD_SECONDS
    passed), or a 500. `read` is set by a statement holding one of `awaited`."""

    read: threading.Event = field(default_factory=threading.Event)
    awaited: tuple[str, ...] = LEXICAL
    on_query: Callable[[], None] = lambda: None  # called as a query arrives
    fail_queries: bool = False
    seen_in_flight: list[bool] = field(default_factory=list)  # per query: was the statement run meanwhile?

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()  # aiohttp keeps the body: fixed_embeddings reads it again
        texts: list[str] = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if any(t.startswith(QUERY_PREFIX) for t in texts):
            self.on_query()
            self.seen_in_flight.append(await asyncio.to_thread(self.read.wait, HOLD_SECONDS))
            if self.fail_queries:
                return web.json_response({"error": {"message": "model overloaded"}}, status=500)
        return await fixed_embeddings(request)


@dataclass
class _Setup:
    embedder: _GatedEmbedder
    gateway: str  # http://127.0.0.1:port, a gateway in this process whose database statements the test sees
    rag_url: str
    key: str


@pytest_asyncio.fixture
async def setup(database: Database, server: Server, fakes: Fakes) -> AsyncIterator[_Setup]:
    stand_in = _GatedEmbedder()
    upstream = web.Application()
    upstream.router.add_post("/v1/embeddings", stand_in.embeddings)
    app = make_app(load_settings(gateway_env(database, server.settings.var_dir, fakes)))
    with serve_in_thread(lambda: upstream) as upstream_port, serve_in_thread(lambda: app) as gateway_port:
        connect = ConnectJsonCaller(server.base_url)
        world = await make_world(server, connect)
        model = await register_e5(connect, server.admin_token, f"http://127.0.0.1:{upstream_port}/v1", "gated")
        token = world.tokens["editor"]
        rag = await new_rag(connect, token, world.tenant_id, model)
        key = await personal_all_key(connect, token, world.tenant_id)
        gateway = f"http://127.0.0.1:{gateway_port}"
        rag_url = f"{gateway}/rag/{rag['id']}"
        files = [
            {"filename": "owls.txt", "content": "Owls hunt mice at night.", "metadata": {"kind": "bird"}},
            {"filename": "bees.txt", "content": "Bees make honey in summer.", "metadata": {"kind": "insect"}},
        ]
        stored = await call("POST", f"{rag_url}/files/content", key, json={"files": files})
        assert stored.status == 201, stored

        def awaited(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            if any(part in statement for part in stand_in.awaited):
                stand_in.read.set()

        engine = app[DB].engine.sync_engine
        event.listen(engine, "before_cursor_execute", awaited)
        try:
            yield _Setup(stand_in, gateway, rag_url, key)
        finally:
            event.remove(engine, "before_cursor_execute", awaited)


async def test_the_lexical_list_is_read_while_the_query_is_embedded(setup: _Setup) -> None:
    answer = await call(
        "POST", f"{setup.rag_url}/context", setup.key, json={"query": "owls hunting at night", "weights": LEXICAL_FIRST}
    )
    assert answer.status == 200, answer
    assert answer.body["data"][0]["filename"] == "owls.txt"
    assert setup.embedder.seen_in_flight == [True]


async def test_a_filters_files_are_read_while_the_query_is_embedded(setup: _Setup, database: Database) -> None:
    """The file rows are locked until the query reaches the stand-in (or HOLD_SECONDS pass): a gateway that reads
    the files a filter allows before it embeds the query waits out the lock. A table lock holds the read back in
    the database, not in the gateway's event loop, so PostgreSQL only (SQLite's readers pass a writer's lock)."""
    if database.backend != "postgresql":
        pytest.skip("a reader held back by a lock: PostgreSQL's table lock")
    locked = psycopg.connect(database.libpq_url)
    locked.execute("LOCK TABLE rag_files IN ACCESS EXCLUSIVE MODE")
    released_by: list[str] = []
    releasing = threading.Lock()

    def release(by: str) -> None:
        with releasing:
            if not released_by:
                released_by.append(by)
                locked.rollback()

    setup.embedder.awaited = METADATA
    setup.embedder.on_query = functools.partial(release, "the query")
    timer = threading.Timer(HOLD_SECONDS, release, ("the hold's end",))
    timer.start()
    body = {"query": "owls hunting at night", "filters": {"kind": "insect"}, "weights": {"dense": 1, "lexical": 0}}
    try:
        answer = await call("POST", f"{setup.rag_url}/context", setup.key, json=body)
    finally:
        timer.cancel()
        release("the test's end")
        locked.close()
    assert released_by == ["the query"]
    assert answer.status == 200, answer
    assert [hit["filename"] for hit in answer.body["data"]] == ["bees.txt"]
    assert setup.embedder.seen_in_flight == [True]


async def test_a_failed_query_embedding_answers_502_and_the_next_search_works(setup: _Setup) -> None:
    setup.embedder.fail_queries = True
    failed = await call("POST", f"{setup.rag_url}/context", setup.key, json={"query": "honey bees"})
    assert failed.status == 502, failed
    assert "overloaded" not in str(failed.body) and "127.0.0.1" not in str(failed.body)
    setup.embedder.fail_queries = False
    setup.embedder.read.clear()
    again = await call(
        "POST", f"{setup.rag_url}/context", setup.key, json={"query": "honey bees", "weights": LEXICAL_FIRST}
    )
    assert again.status == 200 and again.body["data"][0]["filename"] == "bees.txt", again
    assert setup.embedder.seen_in_flight == [True, True]
