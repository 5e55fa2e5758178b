"""At SWITCHBOARD_LOG_LEVEL=DEBUG the logs still carry no model input, output or conversation text (issue 9,
finding 7): a management server and a gateway of this test's own run at DEBUG, content with a unique canary goes
through chat, responses and conversations on both, and the whole log output is scanned for the canary."""

from __future__ import annotations

import re
import secrets
import signal
import tempfile
from pathlib import Path

import aiohttp
import openai

from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.conversation_helpers import add_items, create_conversation, message
from tests.gateway_fixtures import Fakes, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld
from tests.world import must

# A record below WARNING: time, level, (the gateway's process id,) logger name.
_CHATTY_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?:DEBUG|INFO) (?:\d+ )?(\S+) ", re.MULTILINE)


async def test_debug_logs_never_carry_content(
    database: Database, server: Server, fakes: Fakes, gw_world: GatewayWorld
) -> None:
    canary = f"canary-{secrets.token_hex(8)}"
    logs = Path(tempfile.mkdtemp(prefix="switchboard-debuglog-"))
    var_dir = server.settings.var_dir  # the world's provider keys are sealed with this var dir's key
    management_log = (logs / "management.log").open("wb")
    gateway_log = (logs / "gateway.log").open("wb")
    management = await start_server(
        server_env(database, var_dir, SWITCHBOARD_LOG_LEVEL="DEBUG"),
        stdout=management_log,
        stderr=management_log,
    )
    gateway = await start_gateway_process(
        {**gateway_env(database, var_dir, fakes), "SWITCHBOARD_LOG_LEVEL": "DEBUG"}, workers=1, stderr=gateway_log
    )
    try:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0)
        model = gw_world.model("chat")
        sdk.chat.completions.create(model=model, messages=[{"role": "user", "content": f"chat {canary}"}])
        list(
            sdk.chat.completions.create(
                model=model, messages=[{"role": "user", "content": f"stream {canary}"}], stream=True
            )
        )
        conv = sdk.conversations.create(items=[{"role": "user", "content": f"gateway item {canary}"}])
        sdk.responses.create(model=model, input=f"responses {canary}", conversation=conv.id)
        stored = sdk.responses.create(model=model, input=f"stored {canary}", store=True)
        sdk.responses.retrieve(stored.id)
        list(sdk.conversations.items.list(conv.id))

        connect = ConnectJsonCaller(f"http://127.0.0.1:{management.listener_port}")
        token = gw_world.tokens["member"]
        created = await create_conversation(connect, token, gw_world.tenant_id, [message(f"mgmt {canary}")])
        must(await add_items(connect, token, gw_world.tenant_id, created["id"], [message(f"more {canary}")]))
        async with aiohttp.ClientSession() as http:  # a failing request too: errors are logged
            await http.post(
                f"http://127.0.0.1:{management.listener_port}/{'platform.conversations.v1.ConversationService'}"
                "/CreateConversation",
                json={"tenantId": gw_world.tenant_id, "items": [{"type": f"bad-{canary}"}]},
                headers={"Authorization": f"Bearer {token}"},
            )
    finally:
        gateway.proc.send_signal(signal.SIGTERM)
        await gateway.proc.wait()
        await management.stop()
        management_log.close()
        gateway_log.close()
    management_text = (logs / "management.log").read_text(errors="replace")
    gateway_text = (logs / "gateway.log").read_text(errors="replace")
    assert canary not in management_text
    assert canary not in gateway_text
    # Below WARNING only our own loggers speak (server.logs): no client library's URLs, headers or bodies.
    for text in (management_text, gateway_text):
        names = set(_CHATTY_RECORD.findall(text))
        assert {n for n in names if n.split(".")[0] not in ("switchboard", "server", "gateway")} == set()
