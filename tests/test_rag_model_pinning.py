"""A RAG's embedding model is the one it was built with, for as long as the RAG exists, through the real management
API and gateway (the upstream a stand-in that records the model each call asked for).

- An upload the RAG's embedding model cannot take (withdrawn from its tenant, deleted) is refused at once whatever
  its size: one over `rag_inline_bytes` (embedded in the background, after the answer) was accepted as
  `processing` and failed later, while a small one was refused with a 400.
- A RAG that names its embedding model by an alias follows neither the alias's repointing nor the alias's later targets:
  its vectors and its queries' come from the model the alias named when the RAG was created, even once the alias's
  later target is deleted (the RAG was refused then, "the alias is unresolved"). Repointed at another model of the
  same vector size, the alias silently mixed two models' vectors in one index.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import (
    ALIASES,
    DEPLOYMENTS,
    GatewayWorld,
    ModelSpec,
    all_resources_key,
    create_models,
    share_model,
)
from tests.rag_helpers import new_rag
from tests.rag_http import Answer, call
from tests.world import make_world, must


async def _world(server: Server, connect: ConnectJsonCaller) -> GatewayWorld:
    people = await make_world(server, connect)
    return GatewayWorld(tenant_id=people.tenant_id, tag=secrets.token_hex(3), tokens=dict(people.tokens))


def _rag_base(gateway: Gateway, rag: dict[str, Any]) -> str:
    return f"{gateway.base_url.removesuffix('/v1')}/rag/{rag['id']}"


async def _upload(base: str, key: str, name: str, text: str) -> Answer:
    return await call("POST", f"{base}/files/content", key, json={"files": [{"filename": name, "content": text}]})


@pytest.mark.parametrize("unusable", ["withdrawn", "deleted"])
async def test_a_large_upload_is_refused_up_front_like_a_small_one(
    server: Server, gateway: Gateway, fakes: Fakes, connect: ConnectJsonCaller, unusable: str
) -> None:
    gw = await _world(server, connect)
    spec = ModelSpec("embed", upstream=fakes.openai_url, upstream_model="served-embed", task=2, shared=False)
    await create_models(connect, server.admin_token, gw, [spec])
    embed = gw.model("embed")
    await share_model(connect, server.admin_token, gw, embed, {"sharedWith": [gw.tenant_id]})
    rag = await new_rag(connect, gw.tokens["editor"], gw.tenant_id, embed)
    key = await all_resources_key(connect, gw, gw.tokens["editor"], "rag")
    base = _rag_base(gateway, rag)
    assert (await _upload(base, key, "first.txt", "alpha bravo charlie")).status == 201

    if unusable == "withdrawn":
        await share_model(connect, server.admin_token, gw, embed, {})
    else:
        body = {"name": gw.names[embed][1]}
        must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", body, token=server.admin_token))
    for _ in range(100):  # the gateway trusts what it cached for at most its bound (1 s in tests)
        small = await _upload(base, key, "small.txt", "delta echo foxtrot")
        if small.status != 201:
            break
        await asyncio.sleep(0.05)
    assert small.status in (400, 404), small
    # Well over the gateway's rag_inline_bytes (256 KiB by default): embedded in the background if accepted.
    large_text = "\n\n".join(f"Paragraph {i}: " + "golf hotel india juliett " * 20 for i in range(800))
    assert len(large_text.encode()) > gateway.settings.rag_inline_bytes
    large = await _upload(base, key, "large.txt", large_text)
    assert (large.status, large.body) == (small.status, small.body), large
    listed = await call("GET", f"{base}/files", key, params={"include_total": "true"})
    assert listed.status == 200 and listed.body["total"] == 1, listed  # only the file uploaded before


async def _alias(connect: ConnectJsonCaller, admin: str, gw: GatewayWorld, public_id: str, target: str) -> str:
    """A platform alias shared with every tenant, at the world's model `target`: its handle."""
    alias = _alias_body(gw, public_id, target)
    created = must(await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=admin))
    return str(created["name"])


def _alias_body(gw: GatewayWorld, public_id: str, target: str) -> dict[str, Any]:
    kind, name = gw.names[gw.model(target)]
    ref = {"kind": f"MODEL_ALIAS_TARGET_KIND_{kind.name}", "name": name}
    return {"publicModelId": public_id, "targetRef": ref, "sharing": {"shareToAll": True}}


def _asked(fakes: Fakes, since: int, tag: str) -> list[str]:
    """The upstream models of this test (named with its tag) that the stand-in was asked to embed with since
    `since` (other tests' background work may call it meanwhile)."""
    asked = [str((r.json or {}).get("model")) for r in fakes.openai.received[since:] if r.path.endswith("/embeddings")]
    return [model for model in asked if model.endswith(tag)]


async def test_a_rag_keeps_the_model_its_alias_named_when_it_was_created(
    server: Server, gateway: Gateway, fakes: Fakes, connect: ConnectJsonCaller
) -> None:
    gw = await _world(server, connect)
    admin = server.admin_token
    specs = [
        ModelSpec("embed-a", upstream=fakes.openai_url, upstream_model=f"embed-a-{gw.tag}", task=2),
        ModelSpec("embed-b", upstream=fakes.openai_url, upstream_model=f"embed-b-{gw.tag}", task=2),
    ]
    await create_models(connect, admin, gw, specs)
    served_a, served_b = f"embed-a-{gw.tag}", f"embed-b-{gw.tag}"
    alias_id = f"alias/embed-{gw.tag}"
    handle = await _alias(connect, admin, gw, alias_id, "embed-a")
    rag = await new_rag(connect, gw.tokens["editor"], gw.tenant_id, alias_id)
    assert rag["embeddingModel"] == alias_id  # the RAG still names the alias
    key = await all_resources_key(connect, gw, gw.tokens["editor"], "rag")
    base = _rag_base(gateway, rag)
    since = len(fakes.openai.received)
    assert (await _upload(base, key, "a.txt", "alpha bravo charlie")).status == 201
    assert set(_asked(fakes, since, gw.tag)) == {served_a}

    # The platform repoints the alias at another model of the same vector size (4, the stand-in's).
    body = {"name": handle, "alias": _alias_body(gw, alias_id, "embed-b")}
    must(await connect.call(f"{ALIASES}/UpdateModelAlias", body, token=admin))
    for _ in range(100):  # until the gateway routes the alias to its new target (its cache bound is 1 s in tests)
        since = len(fakes.openai.received)
        direct = await call("POST", f"{gateway.base_url}/embeddings", key, json={"model": alias_id, "input": "x"})
        assert direct.status == 200, direct
        if _asked(fakes, since, gw.tag) == [served_b]:
            break
        await asyncio.sleep(0.05)
    assert _asked(fakes, since, gw.tag) == [served_b]  # clients naming the alias reach its new target

    since = len(fakes.openai.received)
    assert (await _upload(base, key, "b.txt", "delta echo foxtrot")).status == 201
    searched = await call("POST", f"{base}/context", key, json={"query": "delta"})
    assert searched.status == 200 and searched.body["data"], searched
    # The RAG's chunks and its queries: still the model it was built with.
    assert set(_asked(fakes, since, gw.tag)) == {served_a}

    # The alias's new target deleted: clients naming the alias are refused, the RAG goes on with its own model.
    async def delete(model: str) -> None:
        body = {"name": gw.names[gw.model(model)][1]}
        must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", body, token=admin))

    await delete("embed-b")
    for _ in range(100):
        direct = await call("POST", f"{gateway.base_url}/embeddings", key, json={"model": alias_id, "input": "x"})
        if direct.status != 200:
            break
        await asyncio.sleep(0.05)
    assert direct.status == 400 and "unresolved" in direct.body["error"]["message"], direct
    since = len(fakes.openai.received)
    assert (await _upload(base, key, "c.txt", "golf hotel india")).status == 201
    searched = await call("POST", f"{base}/context", key, json={"query": "golf"})
    assert searched.status == 200 and searched.body["data"], searched
    assert set(_asked(fakes, since, gw.tag)) == {served_a}

    # Once that model is deleted, the RAG refuses what needs it rather than embed with the alias's new target.
    await delete("embed-a")
    for _ in range(100):
        since = len(fakes.openai.received)
        refused = await call("POST", f"{base}/context", key, json={"query": "delta"})
        if refused.status != 200:
            break
        await asyncio.sleep(0.05)
    assert refused.status == 400 and "no longer exists" in refused.body["error"]["message"], refused
    assert _asked(fakes, since, gw.tag) == []
