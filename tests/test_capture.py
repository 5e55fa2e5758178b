"""Content capture end to end, on both databases, through a real management server and gateway (DEBUG logs, traces
to an OTLP receiver) and an upstream that echoes its input:

- off (the default): a canary sent through every inference surface is nowhere in the database (every table's
  every column), the logs or the traces, and no answer says capture is on;
- on for a key: every answer carries the header, the canary is only in the capture store's groups of bodies,
  sealed (the raw bytes do not hold it), each exchange linked to its usage row, a stream's events joined, long
  bodies cut and marked; only a holder of the capability reads it (operators; a tenant admin once granted, until
  revoked, demoted or removed, a grant not coming back with the role); other tenants' holders get not_found;
  turning capture on and off, granting and reading are audit events;
- the tee on a streamed answer's writer keeps every chunk and leaves no reference cycle behind.
"""

from __future__ import annotations

import asyncio
import gc
import secrets
import socket
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http_writer import StreamWriter
from sqlalchemy import select

from gateway.capture import _tee
from server.capture.exchange import Exchange
from server.capture.store import open_exchange
from server.crypto import SecretBox
from server.store.db import Database as Db
from server.store.models import ApiKeyRow, AuditEventRow, CapturedBodiesRow, CapturedExchangeRow, UsageEventRow
from tests.capture_world import (
    CAPTURE,
    MAX_BODY,
    Stack,
    capture_stack,
    echo_app,
    secret_box,
    specs,
    tables_holding,
)
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.fakes.serve import serve_in_thread
from tests.gateway_world import GatewayWorld, all_resources_key, platform_models, service_account_key, tenant_view
from tests.otlp import Receiver, otlp_receiver
from tests.world import TENANTS, World, make_world, must

HEADER = "x-switchboard-content-capture"
KEY_SCOPE = "CAPTURE_SCOPE_KIND_API_KEY"
GET_SESSION = "switchboard.console.v1.ConsoleService/GetSession"


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    with serve_in_thread(echo_app) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    async with otlp_receiver() as found:
        yield found


@pytest.fixture(scope="module")
async def stack(database: Database, server: Server, receiver: Receiver) -> AsyncIterator[Stack]:
    async with capture_stack(database, server, receiver) as found:
        yield found


@pytest.fixture(scope="module")
async def models(server: Server, upstream_url: str) -> GatewayWorld:
    return await platform_models(ConnectJsonCaller(server.base_url), server.admin_token, specs(upstream_url))


class Tenant:
    """A fresh tenant (its people from tests.world, the models shared with it) and a caller of our own server."""

    def __init__(self, people: World, models: GatewayWorld, stack: Stack, admin_token: str) -> None:
        self.people = people
        self.world = tenant_view(models, people)
        self.connect = ConnectJsonCaller(stack.management_url)
        self.stack = stack
        self.operator = admin_token

    @property
    def id(self) -> str:
        return self.world.tenant_id

    async def key(self, label: str) -> tuple[str, str]:
        secret = await all_resources_key(self.connect, self.world, self.world.tokens["member"], label)
        return self.world.key_ids[label], secret

    async def capture(self, kind: str, scope_id: str, enabled: bool, token: str | None = None) -> Any:
        body = {"tenantId": self.id, "scope": {"kind": kind, "id": scope_id}, "enabled": enabled}
        return await self.connect.call(f"{CAPTURE}/SetCapturePolicy", body, token=token or self.operator)

    async def call(self, method: str, token: str, **body: Any) -> Any:
        return await self.connect.call(f"{CAPTURE}/{method}", body, token=token)


@pytest.fixture
async def tenant(server: Server, models: GatewayWorld, stack: Stack) -> Tenant:
    people = await make_world(server, ConnectJsonCaller(stack.management_url))
    return Tenant(people, models, stack, server.admin_token)


async def _post(
    url: str, secret: str, body: Any = None, form: aiohttp.FormData | None = None
) -> tuple[int, Any, bytes]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            url,
            data=form if form is not None else orjson.dumps(body),
            headers={"Authorization": f"Bearer {secret}"},
        ) as resp,
    ):
        return resp.status, resp.headers, await resp.read()


async def every_surface(stack: Stack, world: GatewayWorld, secret: str, canary: str) -> list[Any]:
    """The canary through chat (buffered and streamed), embeddings, rerank and a transcription; each answer's
    headers."""
    base = stack.gateway_url
    chat = {"model": world.model("cchat"), "messages": [{"role": "user", "content": f"say {canary}"}]}
    form = aiohttp.FormData()
    form.add_field("model", world.model("cwhisper"))
    form.add_field("prompt", f"words {canary}")
    form.add_field("file", b"RIFF-not-really-audio", filename="a.wav", content_type="audio/wav")
    answers = [
        await _post(f"{base}/chat/completions", secret, chat),
        await _post(f"{base}/chat/completions", secret, {**chat, "stream": True}),
        await _post(f"{base}/embeddings", secret, {"model": world.model("cembed"), "input": f"embed {canary}"}),
        await _post(
            f"{base}/rerank", secret, {"model": world.model("crerank"), "query": canary, "documents": [f"d {canary}"]}
        ),
        await _post(f"{base}/audio/transcriptions", secret, form=form),
    ]
    for status, _, raw in answers:
        assert status == 200, raw
    assert canary.encode() in answers[0][2] and canary.encode() not in answers[1][2]  # a stream splits it
    return [headers for _, headers, _ in answers]


async def _rows(database: Database, statement: Any) -> list[Any]:
    db = Db(database.url)
    try:
        async with db.read() as session:
            return list((await session.execute(statement)).all())
    finally:
        await db.close()


async def _bodies(database: Database, ids: list[str], box: SecretBox) -> dict[str, tuple[bytes, bytes]]:
    """Each exchange's request and response bodies, opened as the capture service opens them."""
    db = Db(database.url)
    try:
        async with db.read() as session:
            opened = [await open_exchange(session, i, None, box.open_blob) for i in ids]
    finally:
        await db.close()
    return {o.row.id: (o.request_body, o.response_body) for o in opened}


async def _until(found: Any, done: Any) -> Any:
    """Poll `found()` until `done(value)`: rows are written by background flushers (bounded wait)."""
    value = None
    for _ in range(150):
        value = await found()
        if done(value):
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"still {value!r}")


async def _usage_of(database: Database, key_id: str) -> list[Any]:
    return await _rows(
        database, select(UsageEventRow.id, UsageEventRow.capture_id).where(UsageEventRow.api_key_id == key_id)
    )


async def _header_shows(stack: Stack, secret: str, on: bool) -> None:
    """Wait until a change of policy reached the gateway (invalidation: milliseconds, not a TTL)."""

    async def header() -> bool:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{stack.gateway_url}/models", headers={"Authorization": f"Bearer {secret}"}) as resp,
        ):
            return resp.headers.get(HEADER) == "on"

    await _until(header, lambda value: value == on)


async def test_capture_off_leaves_the_content_nowhere(database: Database, tenant: Tenant, stack: Stack) -> None:
    canary = f"canary-off-{secrets.token_hex(8)}"
    key_id, secret = await tenant.key("plain")
    for headers in await every_surface(stack, tenant.world, secret, canary):
        assert HEADER not in {h.lower() for h in headers}
    usage = await _until(lambda: _usage_of(database, key_id), lambda rows: len(rows) == 5)
    assert all(capture_id is None for _, capture_id in usage)
    assert await tables_holding(database, canary) == {}
    assert "api_keys" in await tables_holding(database, key_id)  # the scan itself finds what is there
    assert await _rows(database, select(CapturedExchangeRow.id).where(CapturedExchangeRow.api_key_id == key_id)) == []
    await asyncio.sleep(0.5)  # the trace exporters' batch delay is 100 ms
    assert stack.receiver.raw, "no trace reached the receiver"
    assert canary.encode() not in b"".join(stack.receiver.raw)
    assert canary not in stack.log_text()


async def test_capture_on_keeps_sealed_exchanges_for_holders_only(
    database: Database, server: Server, tenant: Tenant, stack: Stack
) -> None:
    canary = f"canary-on-{secrets.token_hex(8)}"
    key_id, secret = await tenant.key("captured")
    _, other_secret = await tenant.key("not-captured")
    admin, member = tenant.world.tokens["admin"], tenant.world.tokens["member"]
    # Nobody but an operator turns it on: not the tenant's admin (not granted), its member, or a key.
    for token in (admin, member, secret):
        assert (await tenant.capture(KEY_SCOPE, key_id, True, token)).code == "permission_denied"
    on = must(await tenant.capture(KEY_SCOPE, key_id, True))["policy"]
    assert on["enabled"] and on["updatedBy"] == "platform-admin"
    await _header_shows(stack, secret, True)

    for headers in await every_surface(stack, tenant.world, secret, canary):
        assert headers[HEADER] == "on"
    long_text = "x" * (2 * MAX_BODY)
    chat = {"model": tenant.world.model("cchat"), "messages": [{"role": "user", "content": long_text}]}
    status, headers, _ = await _post(f"{stack.gateway_url}/chat/completions", secret, chat)
    assert status == 200 and headers[HEADER] == "on"
    status, headers, _ = await _post(f"{stack.gateway_url}/chat/completions", other_secret, chat)
    assert status == 200 and HEADER not in {h.lower() for h in headers}  # another key of the tenant: not covered

    usage = await _until(lambda: _usage_of(database, key_id), lambda rows: len(rows) == 6)
    exchanges = await _rows(database, select(CapturedExchangeRow).where(CapturedExchangeRow.api_key_id == key_id))
    assert len(exchanges) == 6
    assert {capture_id for _, capture_id in usage} == {row.id for (row,) in exchanges}  # each with its usage row
    # In the clear, the canary is nowhere in the database; sealed, it is in the capture table only.
    assert await tables_holding(database, canary) == {}
    box = secret_box(server.settings)
    groups = await _rows(database, select(CapturedBodiesRow.sealed).where(CapturedBodiesRow.tenant_id == tenant.id))
    assert groups and all(canary not in sealed for (sealed,) in groups)
    opened = await _bodies(database, [r.id for (r,) in exchanges], box)
    assert sum(canary.encode() in request for request, _ in opened.values()) == 5
    assert canary.encode() not in b"".join(stack.receiver.raw) and canary not in stack.log_text()

    # The operator lists them (newest first, keyset pages, filters) and reads one decrypted.
    listed: list[dict[str, Any]] = []
    token = ""
    while True:
        page = must(
            await tenant.call(
                "ListCapturedExchanges",
                server.admin_token,
                tenantId=tenant.id,
                apiKeyId=key_id,
                pageSize=4,
                pageToken=token,
            )
        )
        listed += page.get("exchanges", [])
        token = page.get("nextPageToken", "")
        if not token:
            break
    assert len(listed) == 6 and len({e["id"] for e in listed}) == 6
    assert [e["time"] for e in listed] == sorted((e["time"] for e in listed), reverse=True)
    assert "requestBody" not in listed[0]
    long = next(e for e in listed if e.get("requestTruncated"))
    assert int(long["requestBytes"]) > MAX_BODY
    kinds = {
        kind: must(await tenant.call("ListCapturedExchanges", server.admin_token, tenantId=tenant.id, callKind=kind))
        for kind in ("CALL_KIND_EMBEDDING", "CALL_KIND_TRANSCRIPTION", "CALL_KIND_CHAT_COMPLETION")
    }
    assert [len(kinds[k]["exchanges"]) for k in kinds] == [1, 1, 3]
    streamed = {"id": next(i for i, (request, _) in opened.items() if b'"stream":true' in request)}
    read = must(await tenant.call("GetCapturedExchange", server.admin_token, tenantId=tenant.id, id=streamed["id"]))
    assert canary in read["requestBody"]
    assert read["responseBody"].startswith("data: ") and read["responseBody"].endswith("data: [DONE]\n\n")
    joined = "".join(
        (orjson.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content", "")
        for line in read["responseBody"].split("\n\n")
        if line.startswith("data: {")
    )
    assert joined == f"echo: say {canary}"
    usage_id = int(read["usage"]["usageEventId"])
    assert (usage_id, streamed["id"]) in {(u, c) for u, c in usage}
    assert read["usage"]["totalTokens"] == "10"
    cut = must(await tenant.call("GetCapturedExchange", server.admin_token, tenantId=tenant.id, id=long["id"]))
    assert len(cut["requestBody"].encode()) == MAX_BODY and cut["exchange"]["requestTruncated"]
    audio = kinds["CALL_KIND_TRANSCRIPTION"]["exchanges"][0]
    heard = must(await tenant.call("GetCapturedExchange", server.admin_token, tenantId=tenant.id, id=audio["id"]))
    form = orjson.loads(heard["requestBody"])
    assert form["fields"]["prompt"] == f"words {canary}" and form["files"][0]["bytes"] == 21
    assert canary in heard["responseBody"]

    # The tenant's admin: refused until granted, then reads; refused again once revoked. Members never.
    admin_id = tenant.people.user_ids["admin"]
    get = {"tenantId": tenant.id, "id": streamed["id"]}
    assert (await tenant.call("GetCapturedExchange", admin, **get)).code == "permission_denied"
    assert (await tenant.call("ListCapturedExchanges", admin, tenantId=tenant.id)).code == "permission_denied"
    grant = {"tenantId": tenant.id, "userId": admin_id}
    assert (await tenant.call("GrantCaptureAccess", admin, **grant)).code == "permission_denied"
    member_grant = {"tenantId": tenant.id, "userId": tenant.people.user_ids["member"]}
    assert (await tenant.call("GrantCaptureAccess", server.admin_token, **member_grant)).code == "failed_precondition"
    must(await tenant.call("GrantCaptureAccess", server.admin_token, **grant))
    assert canary in must(await tenant.call("GetCapturedExchange", admin, **get))["requestBody"]
    assert [g["userId"] for g in must(await tenant.call("ListCaptureAccess", admin, tenantId=tenant.id))["grants"]] == [
        admin_id
    ]
    for token in (member, secret):
        assert (await tenant.call("GetCapturedExchange", token, **get)).code == "permission_denied"
    # Another tenant's granted admin: their own tenant holds no such exchange; ours is not theirs to name.
    outsider = tenant.people.tokens["outsider"]
    other = tenant.people.other_tenant_id
    must(
        await tenant.call(
            "GrantCaptureAccess", server.admin_token, tenantId=other, userId=tenant.people.user_ids["outsider"]
        )
    )
    assert (await tenant.call("GetCapturedExchange", outsider, tenantId=other, id=streamed["id"])).code == "not_found"
    assert (await tenant.call("GetCapturedExchange", outsider, **get)).code == "permission_denied"
    must(await tenant.call("RevokeCaptureAccess", server.admin_token, **grant))
    assert (await tenant.call("GetCapturedExchange", admin, **get)).code == "permission_denied"

    # Off again: answers stop saying so and nothing more is kept.
    must(await tenant.capture(KEY_SCOPE, key_id, False))
    await _header_shows(stack, secret, False)
    await every_surface(stack, tenant.world, secret, canary)
    await _until(lambda: _usage_of(database, key_id), lambda rows: len(rows) == 11)
    assert (
        len(await _rows(database, select(CapturedExchangeRow.id).where(CapturedExchangeRow.api_key_id == key_id))) == 6
    )

    # The audit trail: on, off (each by the operator), the grants, the reads; never the content.
    events = await _rows(
        database, select(AuditEventRow).where(AuditEventRow.tenant_id == tenant.id).order_by(AuditEventRow.occurred_at)
    )
    allowed = [(e.method.rsplit("/", 1)[1], e.resource_name) for (e,) in events if e.outcome == 1]
    assert ("SetCapturePolicy", f"api_key/{key_id} on") in allowed
    assert ("SetCapturePolicy", f"api_key/{key_id} off") in allowed
    assert allowed.index(("SetCapturePolicy", f"api_key/{key_id} on")) < allowed.index(
        ("SetCapturePolicy", f"api_key/{key_id} off")
    )
    assert ("GrantCaptureAccess", admin_id) in allowed and ("RevokeCaptureAccess", admin_id) in allowed
    assert ("GetCapturedExchange", streamed["id"]) in allowed
    refused = {(e.method.rsplit("/", 1)[1], e.code) for (e,) in events if e.outcome == 2}
    assert ("SetCapturePolicy", "permission_denied") in refused
    assert ("GetCapturedExchange", "permission_denied") in refused
    # Decrypted answers were served, never logged nor traced (DEBUG logs, both servers' spans).
    await asyncio.sleep(0.5)  # the trace exporters' batch delay is 100 ms
    assert canary.encode() not in b"".join(stack.receiver.raw) and canary not in stack.log_text()
    assert await tables_holding(database, canary) == {}


async def test_tenant_and_service_account_scopes_cover_their_keys(
    database: Database, server: Server, tenant: Tenant, stack: Stack
) -> None:
    """The widest scope that is on wins: a tenant-wide capture covers every key, a key set off included."""
    sa_secret = await service_account_key(tenant.connect, tenant.world, tenant.world.tokens["admin"], "sa", ["cchat"])
    sa_key = tenant.world.key_ids["sa"]
    (account,) = [
        a for (a,) in await _rows(database, select(ApiKeyRow.service_account_id).where(ApiKeyRow.id == sa_key))
    ]
    key_id, secret = await tenant.key("personal")
    must(await tenant.capture("CAPTURE_SCOPE_KIND_SERVICE_ACCOUNT", account, True))
    await _header_shows(stack, sa_secret, True)
    await _header_shows(stack, secret, False)
    policy = must(
        await tenant.call(
            "GetCapturePolicy", server.admin_token, tenantId=tenant.id, scope={"kind": KEY_SCOPE, "id": sa_key}
        )
    )
    assert policy["capturing"] and not policy["policy"].get("enabled")
    must(await tenant.capture(KEY_SCOPE, key_id, False))
    must(await tenant.capture("CAPTURE_SCOPE_KIND_TENANT", "", True))
    await _header_shows(stack, secret, True)
    listed = must(await tenant.call("ListCapturePolicies", server.admin_token, tenantId=tenant.id))["policies"]
    assert [(p["scope"]["kind"], p.get("enabled", False)) for p in listed] == [
        ("CAPTURE_SCOPE_KIND_TENANT", True),
        ("CAPTURE_SCOPE_KIND_SERVICE_ACCOUNT", True),
        ("CAPTURE_SCOPE_KIND_API_KEY", False),
    ]
    must(await tenant.capture("CAPTURE_SCOPE_KIND_TENANT", "", False))
    await _header_shows(stack, secret, False)
    # Scopes name the tenant's own service accounts and keys, well formed.
    refusals = [
        (("CAPTURE_SCOPE_KIND_API_KEY", "key_nothere"), "not_found"),
        (("CAPTURE_SCOPE_KIND_API_KEY", ""), "invalid_argument"),
        (("CAPTURE_SCOPE_KIND_TENANT", "x"), "invalid_argument"),
        (("CAPTURE_SCOPE_KIND_UNSPECIFIED", ""), "invalid_argument"),
    ]
    for (kind, scope_id), code in refusals:
        assert (await tenant.capture(kind, scope_id, True)).code == code, kind


async def test_the_tee_keeps_every_chunk_and_leaves_the_writer_to_reference_counting() -> None:
    """A stream's writer, teed, is freed as soon as it is dropped: no reference cycle is left for the garbage
    collector, which would cost every captured stream several microseconds."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, protocol = await loop.connect_accepted_socket(lambda: BaseProtocol(loop), ours)
    exchange = Exchange(limit=1024)
    writer = StreamWriter(protocol, loop)
    gc.disable()
    try:
        _tee(writer, exchange.response)
        await writer.write(b"data: a\n\n")
        await writer.write(b"data: b\n\n")
        await writer.write_eof(b"data: [DONE]\n\n")
        freed = weakref.ref(writer)
        del writer
        assert freed() is None
    finally:
        gc.enable()
        transport.close()
        theirs.close()
    assert exchange.response_body == b"data: a\n\ndata: b\n\ndata: [DONE]\n\n"


async def test_a_granted_admin_loses_capture_when_demoted_or_removed(
    database: Database, server: Server, tenant: Tenant, stack: Stack
) -> None:
    """The capability lasts only while its holder stays the tenant's admin: demoted (UpdateTenantMemberRole) or
    removed, they neither read exchanges nor change policies, their own keys never could, and being made admin again
    does not bring an old grant back (only an operator grants it, to an admin of the moment)."""
    canary = f"canary-demoted-{secrets.token_hex(8)}"
    key_id, secret = await tenant.key("demotion")
    must(await tenant.capture(KEY_SCOPE, key_id, True))
    await _header_shows(stack, secret, True)
    chat = {"model": tenant.world.model("cchat"), "messages": [{"role": "user", "content": f"say {canary}"}]}
    assert (await _post(f"{stack.gateway_url}/chat/completions", secret, chat))[0] == 200
    await _until(lambda: _usage_of(database, key_id), lambda rows: len(rows) == 1)
    exchanges = await _rows(database, select(CapturedExchangeRow.id).where(CapturedExchangeRow.api_key_id == key_id))
    ((exchange,),) = exchanges
    operator, admin = server.admin_token, tenant.world.tokens["admin"]
    admin_id, editor_id = tenant.people.user_ids["admin"], tenant.people.user_ids["editor"]
    get = {"tenantId": tenant.id, "id": exchange}
    admin_secret = await all_resources_key(tenant.connect, tenant.world, admin, "admins-own")

    async def role(user_id: str, value: str, token: str = operator) -> None:
        body = {"tenantId": tenant.id, "userId": user_id, "role": value}
        must(await tenant.connect.call(f"{TENANTS}/UpdateTenantMemberRole", body, token=token))

    async def holds(token: str) -> bool:
        session = must(await tenant.connect.call(GET_SESSION, {}, token=token, get=True))
        return any(t["tenantId"] == tenant.id and t["capabilities"].get("capture") for t in session["tenants"])

    async def refused_everything(token: str) -> None:
        calls = [
            ("GetCapturedExchange", get),
            ("ListCapturedExchanges", {"tenantId": tenant.id}),
            ("ListCapturePolicies", {"tenantId": tenant.id}),
            ("GetCapturePolicy", {"tenantId": tenant.id, "scope": {"kind": KEY_SCOPE, "id": key_id}}),
            ("ListCaptureAccess", {"tenantId": tenant.id}),
            ("SetCapturePolicy", {"tenantId": tenant.id, "scope": {"kind": KEY_SCOPE, "id": key_id}, "enabled": False}),
        ]
        for method, body in calls:
            assert (await tenant.call(method, token, **body)).code == "permission_denied", method

    must(await tenant.call("GrantCaptureAccess", operator, tenantId=tenant.id, userId=admin_id))
    assert canary in must(await tenant.call("GetCapturedExchange", admin, **get))["requestBody"]
    assert must(await tenant.call("ListCapturedExchanges", admin, tenantId=tenant.id))["exchanges"]
    must(await tenant.capture(KEY_SCOPE, key_id, True, admin))  # and sets policies
    assert await holds(admin)
    await refused_everything(admin_secret)  # the holder's own key: never

    # Demoted (another admin kept): refused at once, everywhere, and the console no longer offers it.
    await role(editor_id, "TENANT_ROLE_ADMIN")
    await role(admin_id, "TENANT_ROLE_MEMBER")
    await refused_everything(admin)
    await refused_everything(admin_secret)
    assert not await holds(admin)
    listed = must(await tenant.call("ListCaptureAccess", operator, tenantId=tenant.id)).get("grants", [])
    assert admin_id not in [g["userId"] for g in listed]  # no holder is shown who holds nothing
    # Made admin again by a tenant admin: the operator's old grant does not come back with the role.
    await role(admin_id, "TENANT_ROLE_ADMIN", tenant.world.tokens["editor"])
    await refused_everything(admin)
    assert not await holds(admin)

    # Granted again, then removed from the tenant and added back as admin: nothing survives the leaving either.
    must(await tenant.call("GrantCaptureAccess", operator, tenantId=tenant.id, userId=admin_id))
    assert must(await tenant.call("GetCapturedExchange", admin, **get))["requestBody"]
    leave = {"tenantId": tenant.id, "userId": admin_id}
    must(await tenant.connect.call(f"{TENANTS}/RemoveTenantMember", leave, token=operator))
    await refused_everything(admin)
    back = {"tenantId": tenant.id, "userId": admin_id, "role": "TENANT_ROLE_ADMIN"}
    must(await tenant.connect.call(f"{TENANTS}/AddTenantMember", back, token=tenant.world.tokens["editor"]))
    await refused_everything(admin)
    assert not await holds(admin)
    assert (await tenant.call("RevokeCaptureAccess", operator, **leave)).code == "not_found"
