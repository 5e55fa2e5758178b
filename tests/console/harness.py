"""What every browser test of the web console shares: the build (`make console`: npm ci, vite build), chromium, a
real management server serving that build with the development sign-in on, a seeded tenant, and running one of
console/e2e/'s playwright-core scripts, which prints its findings as JSON.

Screenshots go to var/console-screenshots/ (a folder a person can open); the scripts name them <page>-<width>.png.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.settings import Settings, load_settings
from server.tokens import mint_bootstrap_admin, mint_token
from tests.chromium import ensure_chromium
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, server_env, start_server

__all__ = [
    "CONSOLE",
    "SCREENSHOTS",
    "ConsoleWorld",
    "DemoConsole",
    "check_accessible",
    "check_calls_per_load",
    "check_screenshots",
    "console_world",
    "demo_console",
    "flow_done",
    "js_gzip_bytes",
    "not_ready",
    "run_script",
]

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "console"
DIST = CONSOLE / "dist"
SCREENSHOTS = ROOT / "var" / "console-screenshots"


def _built() -> str | None:
    """None when console/dist is current (building it when its sources changed), else why it cannot be built."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "node and npm are not installed: the console cannot be built"
    done = subprocess.run(["make", "-s", "console"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr  # our own build: a failure here is a bug, not a missing tool
    assert (DIST / "index.html").is_file(), "make console built nothing"
    return None


def not_ready() -> str | None:
    """Why the browser tests cannot run on this machine (they skip saying so), or None."""
    return ensure_chromium() or _built()


def js_gzip_bytes() -> int:
    """Every JavaScript file of the build, gzip-compressed (level 9), added up: the console's bundle budget."""
    import gzip

    return sum(len(gzip.compress(path.read_bytes(), 9)) for path in (DIST / "assets").glob("*.js"))


@dataclass
class ConsoleWorld:
    base: str  # the management server, which serves the console at /console
    settings: Settings
    admin_token: str  # the bootstrap platform admin: who the development sign-in signs in as
    tenant_id: str
    member_id: str  # a plain member of the tenant, who can be added to groups
    member_session: str  # a session token of theirs, for a browser cookie
    deployment_label: str  # how the grants picker lists the seeded model deployment
    api: ConnectJsonCaller

    async def call(self, method: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        result = await self.api.call(method, body, token=token or self.admin_token)
        assert result.code == "ok", (method, result)
        payload: dict[str, Any] = result.body
        return payload


async def _seed(world: ConsoleWorld, member_token: str) -> None:
    admin = world.settings.bootstrap_admin
    tenants = "platform.tenants.v1.TenantService"
    await world.call(f"{tenants}/AddTenantMember", {"tenantId": world.tenant_id, "userId": admin, "role": 3})
    await world.api.call("platform.tenants.v1.UserService/GetCurrentUser", {}, token=member_token)  # user record
    await world.call(f"{tenants}/AddTenantMember", {"tenantId": world.tenant_id, "userId": world.member_id, "role": 1})
    deployment = {
        "name": "console-chat",
        "publicModelId": "console-chat",
        "displayName": "Console chat",
        "endpointUrl": "http://127.0.0.1:9/v1",  # never called: the console only lists it
        "servedModelId": "chat",
        "capabilities": {"taskType": "TASK_TYPE_TEXT_GENERATION"},
        "sharing": {"shareToAll": True},
    }
    await world.call(
        "platform.modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}
    )
    # More groups than a table page holds (25), so paging is exercised; and a second tenant for the picker.
    for number in range(30):
        await world.call(
            "platform.tenants.v1.GroupService/CreateGroup", {"tenantId": world.tenant_id, "name": f"team-{number:02}"}
        )
    other = await world.call(f"{tenants}/CreateTenant", {"name": "globex", "displayName": "Globex"})
    await world.call(f"{tenants}/AddTenantMember", {"tenantId": other["tenant"]["id"], "userId": admin, "role": 3})


async def console_world(database: Database, **extra_env: str) -> AsyncIterator[ConsoleWorld]:
    """A management server serving console/dist with the development sign-in on, and a tenant whose admin is the
    person that sign-in signs in as."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-console-"))
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_CONSOLE_DIR=str(DIST),
        SWITCHBOARD_CONSOLE_DEV_SIGN_IN="true",
        **extra_env,
    )
    server = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    base = f"http://127.0.0.1:{server.listener_port}"
    admin_token = mint_bootstrap_admin(settings, ttl_seconds=3600)
    api = ConnectJsonCaller(base)
    try:
        created = await api.call(
            "platform.tenants.v1.TenantService/CreateTenant",
            {"name": "acme", "displayName": "Acme"},
            token=admin_token,
        )
        assert created.code == "ok", created
        member = "bob-console"
        member_token = mint_token(settings, user_id=member, email="bob@example.com", name="Bob Builder")
        world = ConsoleWorld(
            base,
            settings,
            admin_token,
            created.body["tenant"]["id"],
            member,
            member_token,
            "Console chat (console-chat)",
            api,
        )
        await _seed(world, member_token)
        yield world
    finally:
        await server.stop()


async def run_script(script: str, plan: dict[str, Any]) -> dict[str, Any]:
    """Run console/e2e/<script> with the plan (JSON) and return what it printed last (JSON)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    plan = {"screenshots": str(SCREENSHOTS), **plan}
    process = await asyncio.create_subprocess_exec(
        "node",
        f"e2e/{script}",
        json.dumps(plan),
        cwd=CONSOLE,
        env={**os.environ},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode(errors="replace")[-4000:]
    answer: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return answer


@dataclass
class DemoConsole:
    base: str  # the management server serving the console
    gateway: str  # the gateway's origin (the chat calls it)
    demo: dict[str, str]  # var/demo.env: TENANT, CHAT_MODEL, AGENT, MCP_SERVER, RAG, ...
    admin_token: str  # var/admin-token: the bootstrap platform admin, for what a test sets up through the API
    settings: Settings  # the server's, for minting a session token of a test's own person


async def demo_console(database: Database) -> AsyncIterator[DemoConsole]:
    """`switchboard serve --demo` (what `make run` starts) on free ports, serving console/dist: the demo's tenant,
    stand-in chat model, MCP server, RAG, guardrail and agent are the chat's world, as a person's first run sees it."""
    from tests.serving import free_port, stop, until

    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-console-demo-"))
    port, gateway_port, models_port = free_port(), free_port(), free_port()
    base, gateway = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{gateway_port}"
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_PORT=str(port),
        SWITCHBOARD_GATEWAY_PORT=str(gateway_port),
        SWITCHBOARD_GATEWAY_WORKERS="1",
        SWITCHBOARD_DEV_MODELS_PORT=str(models_port),
        SWITCHBOARD_GATEWAY_PUBLIC_URL=gateway,
        SWITCHBOARD_CONSOLE_PUBLIC_URL=base,
        SWITCHBOARD_CONSOLE_DIR=str(DIST),
    )
    log_path = var_dir / "serve.log"
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", "serve", "--demo", env=env, stdout=log, stderr=log
        )
    demo_env = var_dir / "demo.env"

    async def seeded() -> bool:
        assert process.returncode is None, log_path.read_text(errors="replace")
        return demo_env.is_file() and "AGENT=" in demo_env.read_text()

    try:
        await until(seeded, attempts=1200)  # dev-models loads its embedding model, then the demo is seeded
        lines = demo_env.read_text().splitlines()
        demo = {
            name: shlex.split(value)[0]
            for name, _, value in (line.removeprefix("export ").partition("=") for line in lines)
        }
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        yield DemoConsole(base, gateway, demo, (var_dir / "admin-token").read_text().strip(), settings)
    finally:
        await stop(process)


def flow_done(run: dict[str, Any], name: str) -> dict[str, Any]:
    """What a script's run found in one named flow, asserting the flow was done."""
    found: dict[str, Any] = run["flows"][name]
    assert found["ok"], found
    return found


def check_calls_per_load(run: dict[str, Any], names: Iterable[str]) -> None:
    """Issue 24's rule for each named page load in a script's run: GetSession first, at most 3 API calls in all."""
    for name in names:
        page = run["pages"][name]
        assert "error" not in page, (name, page)
        print(f"{name}: {len(page['calls'])} API calls {page['calls']}")
        assert 1 <= len(page["calls"]) <= 3, (name, page["calls"])
        assert page["calls"][0] == "/switchboard.console.v1.ConsoleService/GetSession"


def check_accessible(run: dict[str, Any], names: Iterable[str]) -> None:
    """No serious axe-core violation on any of these views."""
    for name in names:
        assert run["pages"][name]["axe"] == [], (name, run["pages"][name]["axe"])


def check_screenshots(run: dict[str, Any], names: Iterable[str]) -> None:
    """Each view was photographed at 1280 px and 390 px, into files a person can open, and no box of it spilled out of
    the box it sits in at either width."""
    for name in names:
        assert run["pages"][name]["shots"]["spills"] == [], (name, run["pages"][name]["shots"]["spills"])
        shots = [Path(p) for p in run["pages"][name]["shots"]["files"]]
        assert [p.name for p in shots] == [f"{name}-1280.png", f"{name}-390.png"]
        assert all(p.stat().st_size > 1000 for p in shots)
