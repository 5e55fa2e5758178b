"""The `switchboard` command: serve, migrate, token.

switchboard serve                  migrate, then serve management (:8080) and the gateway (:8081)
switchboard migrate                bring the database schema up to date
switchboard token --user alice     mint a session token (embedded signing key) with chosen platform roles
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import signal
import sys
from typing import Any

from server import rag_cli
from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from server.tokens import PLATFORM_ROLES, mint_token

__all__ = ["main"]

_ADMIN_TTL = 30 * 24 * 3600


def _prepare(settings: Settings) -> None:
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.database_url)


def _bootstrap_admin(settings: Settings) -> str | None:
    """On the embedded identity, write a platform-admin token to var/admin-token (0600) and return its path."""
    if settings.jwks_url:
        return None
    token = mint_token(
        settings, user_id=settings.bootstrap_admin, name="Platform admin", roles=PLATFORM_ROLES, ttl_seconds=_ADMIN_TTL
    )
    path = settings.admin_token_path
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return str(path)


async def _serve(settings: Settings) -> int:
    gateway = None
    if importlib.util.find_spec("gateway.__main__") is not None:
        gateway = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway")
    server = await start_management(host=settings.host, port=settings.port, log_level="warning")
    admin = _bootstrap_admin(settings)
    print(f"Switchboard management API  http://{settings.host}:{server.listener_port}  (Connect, gRPC, gRPC-Web)")
    if gateway is not None:
        print(f"Switchboard model gateway   http://{settings.gateway_host}:{settings.gateway_port}/v1")
    print(f"Database                    {settings.database_url}")
    if admin:
        print(f"Platform admin token        {admin}   (export TOKEN=$(cat {admin}))")
        print("Mint more with              .venv/bin/switchboard token --user alice --email alice@example.com")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(server.wait())}
    if gateway is not None:
        waiters.add(asyncio.ensure_future(gateway.wait()))
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    if gateway is not None and gateway.returncode is None:
        gateway.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(gateway.wait(), 30)
    await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchboard", description="Switchboard management and gateway.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="migrate, then serve the management API and the gateway")
    sub.add_parser("migrate", help="bring the database schema up to date")
    token = sub.add_parser("token", help="mint a session token signed by the embedded key")
    token.add_argument("--user", required=True, help="user id (the token's subject)")
    token.add_argument("--email", default="", help="email; pending invites to it become memberships at sign-in")
    token.add_argument("--name", default="", help="display name")
    token.add_argument("--role", action="append", choices=PLATFORM_ROLES, default=[], help="platform role (repeat)")
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds")
    rag_cli.add_parser(sub)
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.command == "rag":
        return rag_cli.run(args, settings.gateway_public_url)
    if args.command == "migrate":
        _prepare(settings)
        print(f"database schema is up to date ({settings.database_url})")
        return 0
    if args.command == "token":
        settings.var_dir.mkdir(parents=True, exist_ok=True)
        print(
            mint_token(
                settings,
                user_id=args.user,
                email=args.email,
                name=args.name,
                roles=tuple(args.role),
                ttl_seconds=args.ttl,
            )
        )
        return 0
    _prepare(settings)
    return asyncio.run(_serve(settings))


if __name__ == "__main__":
    sys.exit(main())
