"""Whether a request's client has hung up, and work that stops when it does.

The gateway's handlers are not cancelled when their client disconnects (aiohttp's handler_cancellation is off: on,
it would cancel every handler at whatever it awaits, a database transaction included), so a handler learns of it
only when it next writes. Work worth stopping early, such as parsing, embedding and storing an upload whose answer
nobody will read, runs under `while_connected`, which looks at the connection every 0.1 s while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

__all__ = ["client_gone", "while_connected"]

T = TypeVar("T")
_LOOK_EVERY = 0.1


def client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def while_connected(request: web.Request, work: Awaitable[T]) -> T:
    """`work`'s result; once the client has gone, `work` is cancelled (its own cleanup runs first) and this raises
    ConnectionResetError, which the middleware counts as a client gone (499) without logging an error."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_LOOK_EVERY)
            if done:
                return task.result()
            if client_gone(request):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise ConnectionResetError("the client went away")
    finally:
        task.cancel()  # a no-op once done; else we were cancelled ourselves
