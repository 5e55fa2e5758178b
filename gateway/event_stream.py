"""A streamed answer (server-sent events) whose end leaves only once its call is metered.

A handler writes events as they come and leaves the last bytes to `end`. They go, with the end of the chunked body,
after the handler has returned: aiohttp finishes a response after its handler, and by then `gateway.calls.metered`
has handed the call's usage to the meter, whose journal keeps it through a kill -9 (server.metering_journal). So a
client that saw a stream end is metered even when its replica dies the moment after. (Ended first and metered after,
a stream could be lost in between: tests/test_topology.py caught one, killed while it read what its upstream sent
after [DONE].)

It counts the body bytes it is given: a stream's size as its client reads it (without the chunked framing), the
figure the call's usage and the request's traffic count record.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from aiohttp import web

__all__ = ["EventStream"]

_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_write = web.StreamResponse.write


class EventStream(web.Response):
    def __init__(self) -> None:
        # A Response holds its headers until the first write (a StreamResponse sends them alone when prepared): they
        # leave with the first events, one system call fewer a stream.
        super().__init__(headers=_HEADERS)
        self.enable_chunked_encoding()
        self.sent = 0

    def write(self, data: bytes | bytearray | memoryview) -> Coroutine[Any, Any, None]:
        self.sent += len(data)
        return _write(self, data)  # its coroutine, not one more of our own around it

    def end(self, last: bytes = b"") -> None:
        """The stream is complete: `last` goes with the end of the body, once the handler has returned."""
        self.body = last

    @property
    def length(self) -> int:
        """The body's bytes: those written and those left to the end."""
        body = self.body
        return self.sent + (len(body) if isinstance(body, bytes) else 0)
