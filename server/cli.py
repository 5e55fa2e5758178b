"""The `switchboard` command: serve, migrate, token.

switchboard serve                  migrate, then serve management (:8080) and the gateway (:8081), restarting
                                   either when it crashes; exits non-zero when one cannot be kept running
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

from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from server.supervision import RestartBudget, describe_exit
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


class _Child:
    """A supervised process: started, awaited, stopped; `start` may be called again after it died."""

    name = ""

    async def start(self) -> None:
        raise NotImplementedError

    async def wait(self) -> int | None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError


class _Management(_Child):
    name = "management API"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._server: Any = None

    async def start(self) -> None:
        self._server = await start_management(host=self._settings.host, port=self._settings.port, log_level="warning")

    @property
    def port(self) -> int:
        return int(self._server.listener_port)

    async def wait(self) -> int | None:
        return await self._server.wait()  # type: ignore[no-any-return]

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()


class _Gateway(_Child):
    name = "model gateway"

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway")

    async def wait(self) -> int | None:
        assert self._proc is not None
        return await self._proc.wait()

    async def stop(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            return
        self._proc.terminate()
        try:
            await asyncio.wait_for(self._proc.wait(), 30)
        except TimeoutError:
            self._proc.kill()
            await self._proc.wait()


def _say(message: str) -> None:
    print(f"switchboard serve: {message}", file=sys.stderr, flush=True)


async def _restart(child: _Child, budget: RestartBudget, stop: asyncio.Event) -> bool:
    """Restart a dead child after the budget's delay; False when the budget is spent (the caller gives up)."""
    while True:
        delay = budget.next_delay()
        if delay is None:
            _say(f"the {child.name} keeps failing; giving up")
            return False
        _say(f"restarting the {child.name} in {delay:g} s")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            return True
        try:
            await child.start()
        except Exception as exc:
            _say(f"the {child.name} failed to start ({type(exc).__name__})")
            continue
        _say(f"the {child.name} is running again")
        return True


async def _supervise(children: list[_Child], settings: Settings, stop: asyncio.Event) -> int:
    """Wait for a stop signal (exit 0) while restarting crashed children; exit 1 when one cannot be kept up."""
    budgets = {child.name: RestartBudget(settings.restart_limit, settings.restart_window_seconds) for child in children}
    exits = {asyncio.ensure_future(child.wait()): child for child in children}
    stopper = asyncio.ensure_future(stop.wait())
    try:
        while True:
            done, _ = await asyncio.wait({stopper, *exits}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                return 0
            for finished in done:
                child = exits.pop(finished)
                _say(f"the {child.name} {describe_exit(finished.result())}")
                if not await _restart(child, budgets[child.name], stop):
                    return 1
                if stop.is_set():
                    return 0
                exits[asyncio.ensure_future(child.wait())] = child
    finally:
        for waiter in (stopper, *exits):
            waiter.cancel()
        for child in reversed(children):
            await child.stop()


async def _serve(settings: Settings) -> int:
    children: list[_Child] = []
    if importlib.util.find_spec("gateway.__main__") is not None:
        gateway = _Gateway()
        await gateway.start()
        children.append(gateway)
    management = _Management(settings)
    await management.start()
    children.insert(0, management)
    admin = _bootstrap_admin(settings)
    print(f"Switchboard management API  http://{settings.host}:{management.port}  (Connect, gRPC, gRPC-Web)")
    if len(children) > 1:
        print(f"Switchboard model gateway   http://{settings.gateway_host}:{settings.gateway_port}/v1")
    print(f"Database                    {settings.database_url}")
    if admin:
        print(f"Platform admin token        {admin}   (export TOKEN=$(cat {admin}))")
        print("Mint more with              .venv/bin/switchboard token --user alice --email alice@example.com")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return await _supervise(children, settings, stop)


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
    args = parser.parse_args(argv)
    settings = load_settings()
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
