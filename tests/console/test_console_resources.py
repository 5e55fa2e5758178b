"""The console's resource pages (models, MCP servers, RAGs, preset agents) in a real browser against real servers:
the browser tests' one `switchboard serve --demo` (tests/console/conftest.py: management server serving the built
console, gateway, dev-models with real e5 embeddings, the seeded demo) and the MCP OAuth stand-in of
tests/test_mcp_oauth.py (an MCP server with its own authorization server). console/e2e/resources.mjs drives
Debian's chromium through every page once — development sign-in, each page's load and main flow — and reports;
this test judges: at most three management API calls per page load, no serious or critical axe-core violation, no
console errors (CSP refusals among them), each flow done, and what it changed is there on the server. Screenshots
at 1280 and 390 px go to var/console-screenshots/.

It runs after the other demo tests (the file order) and adds to the demo tenant what they do not expect: a member,
a group, a quota, MCP servers and an agent. Bounded: one browser session (~40 s)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from server.dev.demo import CHAT_PUBLIC_ID, EMBEDDING_PUBLIC_ID, GUARDRAIL_PUBLIC_ID
from server.dev.models import CHAT_MODEL, GUARDRAIL_MODEL
from server.tokens import mint_token
from tests.clients import ConnectJsonCaller, http_json
from tests.console.harness import SCREENSHOTS, DemoConsole, run_script
from tests.fakes.mcp_servers import CLIENT_ID, CLIENT_SECRET, AutoApprove, oauth_server, serve_asgi, tools_server
from tests.fakes.oauth_servers import FakeAuthServer
from tests.fakes.serve import serve_in_thread
from tests.world import must

MAX_CALLS_PER_LOAD = 3
CALLBACK = "/console/mcp-oauth-callback"


@dataclass
class Stage:
    base: str
    gateway: str
    dev_models: str
    tenant: str
    admin_token: str
    member_session: str  # a plain member of the demo tenant (a session token, for a browser cookie)
    mcp_oauth_url: str
    mcp_tools_url: str
    provider: AutoApprove
    mixup: Mixup


@dataclass
class Mixup:
    """The OAuth mix-up (RFC 9207): a hostile MCP server whose sign-in page sends the person on to an honest
    authorization server, which answers the console's callback naming itself (`iss`)."""

    url: str  # the hostile MCP server
    honest_issuer: str
    honest: FakeAuthServer
    hostile: FakeAuthServer


@contextlib.contextmanager
def _mixup(redirect_uri: str) -> Iterator[Mixup]:
    honest = FakeAuthServer(redirect_uri, "honest-client", "honest-secret")
    with serve_in_thread(honest.app) as honest_port:
        forward = f"http://127.0.0.1:{honest_port}/authorize"
        hostile = FakeAuthServer(
            redirect_uri, "hostile-client", "hostile-secret", forward_to=forward, forward_client_id="honest-client"
        )
        with serve_in_thread(hostile.app) as hostile_port:
            yield Mixup(f"http://127.0.0.1:{hostile_port}/mcp", f"http://127.0.0.1:{honest_port}", honest, hostile)


@contextlib.contextmanager
def _mcp_stand_ins(redirect_uri: str) -> Iterator[tuple[str, str, AutoApprove]]:
    provider = AutoApprove(redirect_uri)
    with serve_asgi(tools_server()) as tools_port, serve_asgi(oauth_server(provider)) as oauth_port:
        yield f"http://127.0.0.1:{oauth_port}/mcp", f"http://127.0.0.1:{tools_port}/mcp", provider


@pytest_asyncio.fixture(scope="module")
async def stage(demo_world: DemoConsole) -> AsyncIterator[Stage]:
    # The console's own MCP OAuth callback on the demo server's address: its default redirect URI.
    with (
        _mcp_stand_ins(demo_world.base + CALLBACK) as (oauth_url, tools_url, provider),
        _mixup(demo_world.base + CALLBACK) as mixup,
    ):
        tenant, admin = demo_world.demo["TENANT"], demo_world.admin_token
        member = mint_token(demo_world.settings, user_id="mia-console", email="mia@example.com", name="Mia Member")
        connect = ConnectJsonCaller(demo_world.base)
        must(await connect.call("platform.tenants.v1.UserService/GetCurrentUser", {}, token=member))
        body = {"tenantId": tenant, "userId": "mia-console", "role": "TENANT_ROLE_MEMBER"}
        must(await connect.call("platform.tenants.v1.TenantService/AddTenantMember", body, token=admin))
        yield Stage(
            base=demo_world.base,
            gateway=demo_world.gateway,
            dev_models=demo_world.demo["DEV_MODELS"],
            tenant=tenant,
            admin_token=admin,
            member_session=member,
            mcp_oauth_url=oauth_url,
            mcp_tools_url=tools_url,
            provider=provider,
            mixup=mixup,
        )


async def _drive(stage: Stage, group_id: str) -> dict[str, Any]:
    plan = {
        "base": stage.base,
        "gateway": stage.gateway,
        "tenant": stage.tenant,
        "groupId": group_id,
        "memberSession": stage.member_session,
        "mcpOAuthUrl": stage.mcp_oauth_url,
        "mcpToolsUrl": stage.mcp_tools_url,
        "devModelsUrl": stage.dev_models,
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "mixupUrl": stage.mixup.url,
        "mixupClientId": stage.mixup.hostile.client_id,
        "mixupClientSecret": stage.mixup.hostile.client_secret,
        "chatModel": CHAT_PUBLIC_ID,
        "embeddingModel": EMBEDDING_PUBLIC_ID,
        "guardrailPublicId": GUARDRAIL_PUBLIC_ID,
        "guardrailModel": GUARDRAIL_MODEL,
        "chatServedModel": CHAT_MODEL,
    }
    return await asyncio.wait_for(run_script("resources.mjs", plan), 240)


@pytest.mark.timeout(600)
async def test_resource_pages_in_a_browser(stage: Stage) -> None:
    connect = ConnectJsonCaller(stage.base)
    admin, tenant = stage.admin_token, stage.tenant
    group = must(
        await connect.call(
            "platform.tenants.v1.GroupService/CreateGroup", {"tenantId": tenant, "name": "console"}, token=admin
        )
    )
    group_id = group["group"]["id"]
    # A tenant quota, so the RAG pages draw a bar against a limit rather than "no limit".
    quota = {"tenantId": tenant, "quota": "64Mi"}
    must(await connect.call("platform.ragmanager.v1.RagQuotaService/SetTenantQuota", quota, token=admin))
    tokens_before = stage.provider.token_requests

    report = await _drive(stage, group_id)

    # Every page: at most three management calls per load, interactive, accessible.
    expected = {"models", "observability", "mcp", "network-policies", "rags", "rag", "agents"}
    assert set(report["pages"]) == expected, report["pages"].keys()
    for name, seen in report["pages"].items():
        assert len(seen["calls"]) <= MAX_CALLS_PER_LOAD, (name, seen["calls"])  # the shell's GetSession included
        assert seen["axe"] == [], (name, seen["axe"])
    for dialog in ("sharingAxe", "registerAxe", "agentEditorAxe"):
        assert report["flows"].get(dialog) == [], (dialog, report["flows"].get(dialog))
    assert report["errors"] == [], report["errors"]
    failed = {name: flow for name, flow in report["flows"].items() if isinstance(flow, dict) and not flow["ok"]}
    assert failed == {}, json.dumps(failed, indent=2)
    for name in expected:
        for width in (1280, 390):
            assert (SCREENSHOTS / f"{name}-{width}.png").stat().st_size > 0

    flows = report["flows"]
    assert flows["models-tabs"]["calls"] == ["/switchboard.resources.v1.ResourceListService/ListExternalModels"], flows
    # MCP: the person's OAuth connection went through the authorization server and Switchboard's token exchange.
    assert stage.provider.token_requests > tokens_before
    # The mix-up: the honest server's answer (its code) was refused by its `iss` and never sent to either token
    # endpoint (the hostile one would have been handed the code and its PKCE verifier).
    refusal = flows["mcp-oauth-mixup"]["refusal"]
    assert f"another authorization server ({stage.mixup.honest_issuer})" in refusal, refusal
    assert stage.mixup.hostile.token_requests == [] and stage.mixup.honest.token_requests == []
    assert flows["network-policy"]["canonical"], flows["network-policy"]
    # RAG: both files (one chosen, one dropped) uploaded with progress, indexed, and found by /context.
    assert all(value == maximum and maximum > 0 for value, maximum in flows["rag-upload"]["progress"]), flows
    assert "parking.md" in flows["rag-upload"]["firstResult"], flows["rag-upload"]
    assert any(call.startswith("POST /rag/") and call.endswith("/files") for call in report["gatewayCalls"])
    # Agents: the keyboard reorder put the second guardrail first, said so, kept focus on it, and was saved.
    agent = flows["agent"]
    assert agent["order"] == ["1. console/guardrail-two", f"2. {GUARDRAIL_PUBLIC_ID}"], agent
    assert agent["announced"] == 1 and agent["focusedAfter"] == "console/guardrail-two", agent
    assert agent["guardrailResults"] == 1, agent  # the pickers search on the server as the person types
    assert f"console/guardrail-two → {GUARDRAIL_PUBLIC_ID}" in agent["listed"], agent

    # A plain member sees the resource pages with what they may use, and no create or manage buttons.
    member = flows["memberView"]
    assert member["nav"] == [
        "Groups",
        "API keys",
        "Models",
        "RAGs",
        "MCP servers",
        "Preset agents",
        "Chat",
        "Usage",
    ], member
    assert member["manageButtons"] == {"models": 0, "rags": 0, "mcp": 0, "agents": 0}, member
    # The deployments shared with every tenant: the demo's, and those of the session's other browser tests, which
    # share its database.
    deployments = must(
        await connect.call("platform.modelmanager.v1.ModelDeploymentService/ListModelDeployments", {}, token=admin)
    )["modelDeployments"]
    shared = [d["name"] for d in deployments if d.get("sharing", {}).get("shareToAll")]
    assert member["rows"]["models"] == len(shared), (member, shared)
    assert all(len(calls) <= MAX_CALLS_PER_LOAD for calls in member["calls"].values()), member

    # What the browser did is on the server.
    agents = must(
        await connect.call(
            "platform.agents.v1.PresetAgentService/GetPresetAgent", {"name": "console-helper"}, token=admin
        )
    )["presetAgent"]
    assert agents["outputGuardrails"] == ["console/guardrail-two", GUARDRAIL_PUBLIC_ID]
    assert agents["defaultMcpServers"] == ["demo-tools"] and len(agents["defaultRags"]) == 1
    servers = must(
        await connect.call(
            "platform.agents.v1.ExternalMcpServerService/GetExternalMcpServer", {"name": "hdr_"}, token=admin
        )
    )["externalMcpServer"]
    assert servers["staticHeaderNames"] == ["X-Team"]
    permissions = must(
        await connect.call(
            "platform.modelmanager.v1.ModelDeploymentService/ListModelDeploymentPermissions",
            {"name": "dev-chat"},
            token=admin,
        )
    )
    assert group_id not in json.dumps(permissions)  # added, then removed, in the editor
    status, _ = await http_json("GET", f"{stage.base}/console/t/{tenant}/agents")
    assert status == 200
