"""Lua scripts on Redis, batched: every script call made in one event-loop turn goes out as one pipeline.

At 32 calls in flight a gateway worker makes dozens of script calls per turn; sent one by one, each costs a socket
write, a pooled connection and a wait of its own (most of redis-py's cost per call). Batched, a turn's calls share
one write and one round trip; each is still its own atomic EVALSHA, and each caller gets its own reply or error.
Scripts are loaded on first use and again whenever Redis answers NOSCRIPT (a restart, SCRIPT FLUSH); only the calls
that got NOSCRIPT are sent again, so none runs twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from typing import Any

__all__ = ["ScriptBatcher", "ScriptFailed"]


class ScriptFailed(Exception):
    """Redis could not be reached or refused the call; the message is the exception's class name only."""


class ScriptBatcher:
    def __init__(self, redis: Any, scripts: dict[str, str], *, timeout: float) -> None:
        self._redis = redis
        self._timeout = timeout
        self._sources = scripts
        self._shas = {
            name: hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest() for name, source in scripts.items()
        }
        self._pending: list[tuple[str, list[Any], asyncio.Future[Any]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run script `name` with these keys and arguments in the next batch; its reply."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append((name, [self._shas[name], len(keys), *keys, *args], future))
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        task = asyncio.ensure_future(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[str, list[Any], asyncio.Future[Any]]]) -> None:
        from redis.exceptions import NoScriptError, RedisError

        try:
            async with asyncio.timeout(self._timeout):
                replies = await self._execute([command for _, command, _ in batch])
                missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
                if missing:
                    for name in {batch[i][0] for i in missing}:
                        await self._redis.script_load(self._sources[name])
                    again = await self._execute([batch[i][1] for i in missing])
                    for i, reply in zip(missing, again, strict=True):
                        replies[i] = reply
        except (RedisError, OSError) as exc:  # TimeoutError is an OSError
            failure = ScriptFailed(type(exc).__name__)
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(failure)
            return
        for (_, _, future), reply in zip(batch, replies, strict=True):
            if future.done():  # its caller gave up (cancelled)
                continue
            if isinstance(reply, Exception):
                future.set_exception(ScriptFailed(type(reply).__name__))
            else:
                future.set_result(reply)

    async def _execute(self, commands: list[list[Any]]) -> list[Any]:
        """Send the EVALSHAs in one write on one pooled connection and read their replies in order; an error reply
        is returned in its place. Commands are packed by hiredis (C): redis-py's own packer costs more per call than
        the rest of the limiter. The batch has one deadline (in `_send`), not one per reply: a connection it cuts
        off mid-batch is closed, never reused out of step."""
        import hiredis
        from redis.exceptions import ResponseError

        pool = self._redis.connection_pool
        connection = await pool.get_connection()
        try:
            await connection.send_packed_command(b"".join(hiredis.pack_command(("EVALSHA", *c)) for c in commands))
            replies: list[Any] = []
            for _ in commands:
                try:
                    replies.append(await connection.read_response(timeout=math.inf))
                except ResponseError as error:  # read whole: the connection stays in step
                    replies.append(error)
            return replies
        except BaseException:
            await connection.disconnect(nowait=True)
            raise
        finally:
            await pool.release(connection)

    async def close(self) -> None:
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
