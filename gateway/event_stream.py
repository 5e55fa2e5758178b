"""A streamed answer (server-sent events) whose end leaves only once its call is metered.

A handler writes events as they come and leaves the last bytes to `end`. They go, with the end of the chunked body,
after the handler has returned: aiohttp finishes a response after its handler, and by then `gateway.calls.metered`
has handed the call's usage to the meter, whose journal keeps it through a kill -9 (server.metering_journal). So a
client that saw a stream end is metered even when its replica dies the moment after. (Ended first and metered after,
a stream could be lost in between: tests/test_topology.py caught one, killed while it read what its upstream sent
after [DONE].) Work that may wait but must not hold back the client's end, such as reading the rest of an upstream's
body so that its connection can be pooled, is given to `end` as `after`.

It counts the body bytes it is given: a stream's size as its client reads it (without the chunked framing), the
figure the call's usage and the request's traffic count record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiohttp import web

__all__ = ["EventStream"]

_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


class EventStream(web.Response):
    def __init__(self) -> None:
        # A Response holds its headers until the first write (a StreamResponse sends them alone when prepared): they
        # leave with the first events, one system call fewer a stream.
        super().__init__(headers=_HEADERS)
        self.enable_chunked_encoding()
        self.sent = 0
        self._after: Callable[[], Awaitable[None]] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> Coroutine[Any, Any, None]:
        self.sent += len(data)
        return super().write(data)  # its coroutine, not one more of our own around it

    def end(self, last: bytes = b"", after: Callable[[], Awaitable[None]] | None = None) -> None:
        """The stream is complete: `last` goes with the end of the body, once the handler has returned; `after` runs
        once that was written (or could not be)."""
        self.body = last
        self._after = after

    @property
    def length(self) -> int:
        """The body's bytes: those written and those left to the end."""
        body = self.body
        return self.sent + (len(body) if isinstance(body, bytes) else 0)

    async def write_eof(self, data: bytes = b"") -> None:
        after, self._after = self._after, None
        try:
            await super().write_eof(data)
        finally:
            if after is not None:
                await after()
