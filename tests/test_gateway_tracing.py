"""With an exporter configured, the gateway emits one span per request carrying ids and counts, never content."""

from __future__ import annotations

import asyncio
import signal
import tempfile
from pathlib import Path

import openai

from tests.conftest import Database
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld


async def test_spans_carry_ids_and_counts_but_no_content(
    database: Database, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld
) -> None:
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), "SWITCHBOARD_OTEL_EXPORTER": "console"}
    stdout = Path(tempfile.mkdtemp(prefix="switchboard-gw-trace-")) / "stdout.log"
    gw = await start_gateway_process(env, workers=1, stdout_path=stdout)
    marker = "PROMPT-MARKER-in-a-span"
    try:
        sdk = openai.AsyncOpenAI(base_url=gw.base_url, api_key=gw_world.keys["all"], max_retries=0)
        result = await sdk.chat.completions.create(
            model=gw_world.model("chat"), messages=[{"role": "user", "content": marker}]
        )
        assert result.choices[0].message.content
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)
    text = stdout.read_text(errors="replace")
    assert '"name": "POST /v1/chat/completions"' in text
    assert gw_world.model("chat") in text  # the model id is an attribute
    assert '"switchboard.usage.total_tokens": 10' in text
    assert marker not in text  # no input
    assert "Hello from" not in text  # no output
    assert gw_world.keys["all"] not in text  # no credentials
