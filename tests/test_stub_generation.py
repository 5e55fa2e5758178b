"""Another Python project generates stubs from proto/ with grpcio-tools, as docs/stubs.md says, and calls the server.

The `stubs` blocks of docs/stubs.md run as written in a fresh directory standing for the other project, whose `.venv` is
this one's (it has grpcio-tools already, so the `pip install` finds nothing to do). The stubs must import under the
project's own package without touching the standard library's `platform`, and a generated grpcio stub must get a
real answer from a real server on loopback.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.clients import http_json
from tests.conftest import Server
from tests.readme import stubs_blocks

ROOT = Path(__file__).resolve().parent.parent


async def _run(*args: str, cwd: Path, env: dict[str, str]) -> str:
    proc = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    return text


async def test_grpcio_tools_stubs_from_proto_call_the_server(server: Server, tmp_path: Path) -> None:
    blocks = stubs_blocks()
    assert set(blocks) == {"shell", "python"}, blocks
    status, created = await http_json(
        "POST",
        f"{server.base_url}/platform.tenants.v1.TenantService/CreateTenant",
        body={"name": "stubs-from-proto"},
        headers={"Authorization": f"Bearer {server.admin_token}"},
    )
    assert status == 200, created

    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    # Only what a user's shell has, and where this repository is.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SWITCHBOARD_", "VIRTUAL_ENV"))}
    env["SWITCHBOARD"] = str(ROOT)
    await _run("bash", "-euo", "pipefail", "-c", blocks["shell"], cwd=tmp_path, env=env)

    package = tmp_path / "stubs" / "switchboard_api"
    assert (package / "platform" / "tenants" / "v1" / "tenant_service_pb2_grpc.py").is_file()
    assert not (package / "grpc").exists(), "a grpc/ folder would shadow grpcio"
    (tmp_path / "client.py").write_text(blocks["python"] + "\n")
    env.update(PYTHONPATH="stubs", API=server.base_url, TOKEN=server.admin_token)
    out = await _run(".venv/bin/python", "client.py", cwd=tmp_path, env=env)
    assert "stubs-from-proto" in out, out
    assert out.startswith(("Linux", "Darwin", "Windows")), out  # the standard library's platform.system()
