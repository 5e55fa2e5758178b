"""The audit trail as a SIEM stream, checked at real receivers: an OTLP/HTTP logs receiver on loopback (decoding the
opentelemetry-proto messages a collector would) and JSON-lines files, from the management server and the gateway."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from server.audit.events import AuditEvent, Outcome
from server.audit.export import event_json
from server.protojson import message_to_dict
from server.services.audit import audit_service
from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.gateway_fixtures import Fakes, gateway_env, start_gateway_process
from tests.world import TENANTS, must

AUDIT = "switchboard.audit.v1.AuditService/ListAuditEvents"


@dataclass
class Receiver:
    url: str
    requests: list[ExportLogsServiceRequest] = field(default_factory=list)

    def records(self) -> list[tuple[dict[str, str], Any, str]]:
        """(attributes, record, service.name) of every log record received."""
        found = []
        for request in self.requests:
            for resource_logs in request.resource_logs:
                service = {a.key: a.value.string_value for a in resource_logs.resource.attributes}["service.name"]
                for scope in resource_logs.scope_logs:
                    assert scope.scope.name == "switchboard.audit"
                    for record in scope.log_records:
                        found.append(({a.key: a.value.string_value for a in record.attributes}, record, service))
        return found


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    received: list[ExportLogsServiceRequest] = []

    async def logs(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        received.append(ExportLogsServiceRequest.FromString(await request.read()))
        return web.Response(body=ExportLogsServiceResponse().SerializeToString(), content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/logs", logs)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    found = Receiver(f"http://127.0.0.1:{port}/v1/logs")
    found.requests = received
    try:
        yield found
    finally:
        await runner.cleanup()


async def _until(check: Any) -> Any:
    for _ in range(100):
        found = check()
        if found:
            return found
        await asyncio.sleep(0.1)
    return check()


async def _own_server(database: Database, **extra: str) -> tuple[Any, ConnectJsonCaller, str]:
    env = server_env(database, Path(tempfile.mkdtemp(prefix="switchboard-var-")), **extra)
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    admin = mint_token(settings, user_id="export-admin", roles=PLATFORM_ROLES)
    return proc, ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}"), admin


async def test_management_events_reach_an_otlp_receiver(database: Database, receiver: Receiver) -> None:
    proc, connect, admin = await _own_server(database, SWITCHBOARD_AUDIT_EXPORT=f"otlp:{receiver.url}")
    try:
        tenant = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": "otlp-export"}, token=admin))["tenant"]
        refused = await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": tenant["id"]}, token=None)
        assert refused.code == "unauthenticated"

        def mine() -> list[Any]:
            return [r for r in receiver.records() if r[0].get("switchboard.resource.name") == "otlp-export"]

        records = await _until(mine)
        anonymous = await _until(
            lambda: [r for r in receiver.records() if r[0]["switchboard.audit.method"].endswith("/DeleteTenant")]
        )
    finally:
        await proc.stop()
    [(attributes, record, service)] = records
    assert service == "switchboard-management"
    assert attributes["switchboard.audit.method"] == f"/{TENANTS}/CreateTenant"
    assert attributes["switchboard.audit.outcome"] == "OUTCOME_ALLOWED"
    assert attributes["switchboard.resource.name"] == "otlp-export"
    assert attributes["enduser.id"] == "export-admin"
    assert attributes["client.address"].startswith("127.0.0.1")
    assert record.severity_text == "INFO" and record.event_name == "switchboard.audit"
    assert json.loads(record.body.string_value)["id"] == attributes["switchboard.audit.id"]
    [(attributes, record, _service)] = anonymous
    assert (attributes["switchboard.audit.outcome"], attributes["switchboard.audit.code"]) == (
        "OUTCOME_REFUSED",
        "unauthenticated",
    )
    assert attributes["switchboard.audit.actor.type"] == "ACTOR_TYPE_ANONYMOUS" and record.severity_text == "WARN"


async def test_json_lines_match_what_the_api_answers(database: Database) -> None:
    path = Path(tempfile.mkdtemp(prefix="switchboard-audit-")) / "audit.jsonl"
    proc, connect, admin = await _own_server(database, SWITCHBOARD_AUDIT_EXPORT=f"jsonl:{path}")
    try:
        must(await connect.call(f"{TENANTS}/CreateTenant", {"name": "jsonl-export"}, token=admin))

        def lines() -> list[dict[str, Any]]:
            text = path.read_text() if path.exists() else ""
            return [json.loads(line) for line in text.splitlines()]

        [line] = await _until(lambda: [x for x in lines() if x.get("resourceName") == "jsonl-export"])
        answered = must(await connect.call(AUDIT, {"resourceName": "jsonl-export"}, token=admin, get=True))
    finally:
        await proc.stop()
    assert answered["events"] == [line]
    assert line["source"] == "SOURCE_MANAGEMENT" and line["outcome"] == "OUTCOME_ALLOWED"


async def test_a_line_is_the_event_as_stored_when_the_request_names_more_than_a_column_holds(
    database: Database,
) -> None:
    """The trail keeps a resource name up to its column; the stream streams what the API answers, not the request's
    whole field (a refused request naming megabytes would otherwise reach the SIEM whole)."""
    path = Path(tempfile.mkdtemp(prefix="switchboard-audit-")) / "audit.jsonl"
    proc, connect, admin = await _own_server(database, SWITCHBOARD_AUDIT_EXPORT=f"jsonl:{path}")
    name = "long-" + "x" * 5000
    try:
        refused = await connect.call(f"{TENANTS}/CreateTenant", {"name": name}, token=admin)
        assert refused.code == "invalid_argument"

        def lines() -> list[dict[str, Any]]:
            text = path.read_text() if path.exists() else ""
            return [json.loads(line) for line in text.splitlines()]

        [line] = await _until(lambda: [x for x in lines() if x.get("resourceName", "").startswith("long-")])
        answered = must(await connect.call(AUDIT, {"resourceName": name[:256]}, token=admin, get=True))
    finally:
        await proc.stop()
    assert answered["events"] == [line]


@pytest.mark.parametrize("microsecond", [0, 161_000, 161_234])
def test_a_line_writes_the_time_as_the_api_does_whatever_its_fraction(microsecond: int) -> None:
    # The API's JSON writes 0, 3, 6 or 9 fractional digits: .161000 is .161 there (a one-in-a-thousand event
    # in the end-to-end test above).
    event = AuditEvent(
        method="/platform.tenants.v1.TenantService/CreateTenant",
        outcome=Outcome.ALLOWED,
        time=datetime(2026, 11, 30, 3, 48, 43, microsecond, tzinfo=UTC),
    )
    assert event_json(event) == message_to_dict(audit_service._event(event))


async def test_gateway_events_reach_the_stream(database: Database, server: Server, fakes: Fakes) -> None:
    path = Path(tempfile.mkdtemp(prefix="switchboard-audit-")) / "gateway.jsonl"
    env = {**gateway_env(database, server.settings.var_dir, fakes), "SWITCHBOARD_AUDIT_EXPORT": f"jsonl:{path}"}
    gw = await start_gateway_process(env, workers=1)
    try:
        headers = {"Authorization": "Bearer sb_not_a_key_of_ours"}
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{gw.base_url}/models", headers=headers) as resp,
        ):
            assert resp.status == 401

        def lines() -> list[dict[str, Any]]:
            text = path.read_text() if path.exists() else ""
            return [json.loads(line) for line in text.splitlines()]

        [line] = await _until(lambda: [x for x in lines() if x["method"] == "gateway.key_refused"])
    finally:
        gw.proc.terminate()
        await gw.proc.wait()
    assert (line["source"], line["resourceName"], line["code"]) == ("SOURCE_GATEWAY", "/v1/models", "unauthenticated")
    assert "sb_not_a_key_of_ours" not in json.dumps(line)
