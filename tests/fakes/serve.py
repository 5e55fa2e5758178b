"""Run an aiohttp app on 127.0.0.1:0 in a thread of its own, so sync clients in tests cannot block it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web


@contextmanager
def serve_in_thread(make: Callable[[], web.Application], *, host: str = "127.0.0.1") -> Iterator[int]:
    """Yield the port the app listens on; stop it (running its cleanup) on exit."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        state["loop"] = loop

        async def start() -> web.AppRunner:
            runner = web.AppRunner(make(), access_log=None, shutdown_timeout=1)
            await runner.setup()
            site = web.TCPSite(runner, host, 0)
            await site.start()
            state["port"] = runner.addresses[0][1]
            return runner

        runner = loop.run_until_complete(start())
        state["stop"] = asyncio.Event()
        ready.set()
        loop.run_until_complete(state["stop"].wait())
        loop.run_until_complete(runner.cleanup())
        leftovers = asyncio.all_tasks(loop)  # idle keep-alive connections
        for task in leftovers:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(30)
    try:
        yield state["port"]
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(30)


@contextmanager
def chat_upstream(chat: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Iterator[str]:
    """A model upstream answering /v1/chat/completions with `chat` alone, in a thread: its /v1 base URL."""

    def app() -> web.Application:
        made = web.Application()
        made.router.add_post("/v1/chat/completions", chat)
        return made

    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}/v1"
