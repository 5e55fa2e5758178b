"""Two tenants calling one shared model whose upstream answers more than it is asked: through the real gateway,
every answer a tenant receives carries that tenant's own prompt (its connections are pooled apart from the other
tenant's). The upstream is a plain asyncio server on loopback that writes exactly the bytes a test chose."""

from __future__ import annotations

import asyncio
import secrets
import signal

import aiohttp
import orjson

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Database, Server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models
from tests.test_upstream_http import Answer, read_request, serving
from tests.test_upstream_http import Server as Upstream
from tests.world import make_world

pytestmark = ONE_BACKEND  # whose answer a pooled connection carries is decided by the pool, not the database


def completion(content: str) -> bytes:
    body = orjson.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "stray",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def answers_twice(record: Upstream, *, on_next: bool) -> Answer:
    """Echo the last user message after 20 ms, then answer it once more: 50 ms later (`on_next=False`), or the
    moment the connection's next request arrives, ahead of that request's own answer (`on_next=True`). Either way
    the stray answer is taken as the answer to the request waiting on the connection: another tenant's, if the
    pools were shared."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        late: set[asyncio.Task[None]] = set()
        previous = b""

        async def again(data: bytes) -> None:
            await asyncio.sleep(0.05)
            if not writer.is_closing():
                writer.write(data)

        while True:
            request = await read_request(reader)
            record.requests.append(request)
            prompt = orjson.loads(request.split(b"\r\n\r\n", 1)[1])["messages"][-1]["content"]
            if on_next:
                writer.write(previous)
            await asyncio.sleep(0.02)
            previous = completion(prompt)
            writer.write(previous)
            if not on_next:
                task = asyncio.create_task(again(previous))
                late.add(task)
                task.add_done_callback(late.discard)

    return answer


async def test_tenants_sharing_a_misbehaving_upstream_only_ever_get_their_own_answers(
    database: Database, server: Server, gateway: Gateway, fakes: Fakes
) -> None:
    """One gateway worker, so both tenants' calls go through the same process and its pools. Calls alternate
    strictly (a shared pool hands the other tenant the stray answer on the very first reuse), then run
    concurrently."""
    connect = ConnectJsonCaller(server.base_url)
    world = await make_world(server, connect)
    records = {"on-next": Upstream(""), "late": Upstream("")}
    async with (
        serving(answers_twice(records["on-next"], on_next=True)) as on_next,
        serving(answers_twice(records["late"], on_next=False)) as late,
    ):
        tag = secrets.token_hex(3)
        first = GatewayWorld(tenant_id=world.tenant_id, tag=tag)
        specs = [ModelSpec("on-next", upstream=f"{on_next.url}/v1"), ModelSpec("late", upstream=f"{late.url}/v1")]
        await create_models(connect, server.admin_token, first, specs)
        second = GatewayWorld(tenant_id=world.other_tenant_id, tag=tag, names=first.names)
        keys = {
            "tenant-a": await all_resources_key(connect, first, world.tokens["member"], "a"),
            "tenant-b": await all_resources_key(connect, second, world.tokens["outsider"], "b"),
        }
        worker = await start_gateway_process(gateway_env(database, gateway.settings.var_dir, fakes), workers=1)

        async def call(http: aiohttp.ClientSession, model: str, tenant: str, i: int) -> tuple[str, str]:
            prompt = f"{tenant}-{i}"
            body = {"model": first.model(model), "messages": [{"role": "user", "content": prompt}]}
            headers = {"Authorization": f"Bearer {keys[tenant]}"}
            async with http.post(f"{worker.base_url}/chat/completions", json=body, headers=headers) as resp:
                answer = await resp.json()
            assert resp.status == 200, answer
            return prompt, answer["choices"][0]["message"]["content"]

        async def calls(http: aiohttp.ClientSession, tenant: str) -> list[tuple[str, str]]:
            return [await call(http, "late", tenant, i) for i in range(30)]

        try:
            async with aiohttp.ClientSession() as http:
                alternating = [await call(http, "on-next", tenant, i) for i in range(10) for tenant in keys]
                concurrent = await asyncio.gather(calls(http, "tenant-a"), calls(http, "tenant-b"))
        finally:
            worker.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(worker.proc.wait(), 60)
    seen = alternating + concurrent[0] + concurrent[1]
    assert len(seen) == 80 and all(records.values())
    assert all(received.startswith(sent.rsplit("-", 1)[0] + "-") for sent, received in seen), seen
