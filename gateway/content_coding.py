"""Request bodies inflated by their Content-Encoding here, not by aiohttp: a stream that does not end where its
format says it ends is refused, and so is one that inflates too far for its size, as soon as it does.

aiohttp (3.14) inflates a gzip, deflate, br or zstd body as it arrives, but takes a gzip stream cut short (no end
of its deflate data, or no trailer with its CRC and length) for a whole body: the handler read a prefix of the JSON
or form and could act on it. And it inflated whatever a route's reader asked for, up to the route's limit: 128 MiB
for a transcription, from a gzip body of 128 KiB. So the gateway's listener (gateway.parse_errors.listen) turns its
decompression off, and `decode_bodies` gives each request whose Content-Encoding names a coding other than identity
a `DecodedBody` as its `request.content`, the stream every reader of a body uses (gateway.middleware.read_body, the
multipart forms of transcriptions and RAG uploads):

- inflated from the first read only (a request refused before its body is read costs no inflation), in pieces of
  at most 256 KiB, no faster than the reader takes them (the stream's own back-pressure);
- gzip (one member after another, at most `_MEMBERS`) and deflate (zlib-wrapped, or raw as some clients send it);
  br and zstd, which aiohttp would decode with optional packages the gateway does not install, are a 400, and so is
  any other coding, or more than one (names are case-insensitive, identity is none, x-gzip is gzip);
- a stream that does not decode, ends before its end, or goes on after a deflate stream's end: a 400;
- past the first MiB, more than `RATIO` bytes out per compressed byte in: a 413 as soon as it does. JSON and forms
  compress 5-50 fold (deflate cannot pass about 1,030); a bomb of zeros about 1,000. The route's own limit is then
  still counted by its reader, as the body inflates.

Only public seams of aiohttp: the web server's `request_factory` and `request_handler` (wrapped once, as
gateway.header_deadline's `track_requests` does), the request message's `headers`, and `StreamReader`.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from aiohttp import StreamReader, hdrs, web
from aiohttp.base_protocol import BaseProtocol
from aiohttp.streams import EMPTY_PAYLOAD

from gateway.middleware import MiB, undecodable_body
from server.errors import InvalidArgument, PayloadTooLarge

__all__ = ["RATIO", "DecodedBody", "decode_bodies"]

RATIO = 200  # bytes out per compressed byte in, past the first MiB
_FREE = MiB  # inflated whatever its compressed size
_PIECE = 256 * 1024  # inflated at once, at most
_MEMBERS = 64  # gzip members one after another (each costs a new inflater)
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_ALIASES = {"x-gzip": "gzip"}  # RFC 9110 8.4.1.3


def decode_bodies(server: web.Server) -> None:
    """Give each request of `server` whose body has a Content-Encoding other than identity a `DecodedBody` (one it
    cannot decode is refused as its body is first read), and stop its inflating when the request has been handled.
    Call once, before the server accepts connections, for a server whose request handlers do not decompress
    (`auto_decompress=False`)."""
    make_request = server.request_factory
    inner = server.request_handler

    def request_factory(message: Any, payload: StreamReader, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        # No body, no coding (and no header table either: an unparsable request's stand-in message has a plain dict)
        coding = None if payload is EMPTY_PAYLOAD else _coding(message.headers.getall(hdrs.CONTENT_ENCODING, ()))
        if coding is not None:
            payload = DecodedBody(payload, coding, protocol)
        return make_request(message, payload, protocol, writer, task)

    async def handled(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await inner(request)
        finally:
            content = request.content
            if isinstance(content, DecodedBody):  # before aiohttp reads and drops the rest of the raw body
                await content.close()

    server.request_factory = request_factory
    server.request_handler = handled


def _coding(values: Iterable[str]) -> str | None:
    """The one coding the Content-Encoding header lines `values` name besides identity, lower-cased (x-gzip as
    gzip), or None for an uncompressed body; several codings come back as the header says, for `_Inflater` to refuse.
    aiohttp's own `message.compression` is set only for a lone name it knows: "gzip, identity", a name it does not
    know, or a second header line went to the handler as if uncompressed, and names are case-insensitive (RFC 9110
    8.4)."""
    codings = [coding.strip(" \t") for value in values for coding in value.split(",")]
    # Only ASCII is lower-cased: str.lower maps some other letters to ASCII ones (K, the Kelvin sign, to k).
    named = [coding.lower() if coding.isascii() else coding for coding in codings]
    named = [_ALIASES.get(coding, coding) for coding in named if coding not in ("", "identity")]
    if not named:
        return None
    return ", ".join(named)


class DecodedBody(StreamReader):
    """The inflated body of `raw` (the body as received), read as any aiohttp body is."""

    __slots__ = ("_coding", "_flow", "_inflating", "raw")

    def __init__(self, raw: StreamReader, coding: str, connection: BaseProtocol) -> None:
        self.raw = raw
        self._coding = coding
        self._flow = _Flow(connection)
        self._inflating: asyncio.Task[None] | None = None
        super().__init__(self._flow, _PIECE, loop=asyncio.get_running_loop())

    async def readany(self) -> bytes:
        self._start()
        return await super().readany()

    async def read(self, n: int = -1) -> bytes:
        self._start()
        return await super().read(n)

    async def readuntil(self, separator: bytes = b"\n", *, max_size: int | None = None) -> bytes:
        self._start()
        return await super().readuntil(separator, max_size=max_size)

    async def readchunk(self) -> tuple[bytes, bool]:
        self._start()
        return await super().readchunk()

    async def wait_eof(self) -> None:
        self._start()
        await super().wait_eof()

    async def close(self) -> None:
        """Stop inflating (the request has been handled)."""
        if self._inflating is not None and not self._inflating.done():
            self._inflating.cancel()
            await asyncio.wait([self._inflating])

    def _start(self) -> None:
        if self._inflating is None:
            self._inflating = asyncio.get_running_loop().create_task(self._inflate())

    async def _inflate(self) -> None:
        try:
            inflater = _Inflater(self._coding)
            while chunk := await self.raw.readany():
                for piece in inflater.inflate(chunk):
                    self.feed_data(piece)
                    await self._flow.wanted()
            inflater.finish()
        except Exception as exc:  # the reader raises it: a refusal above, or the raw body's own error
            # First let a reader woken by the last piece take it and wait again: `readuntil` checks for an exception
            # only when called, and would wait for ever on one set between its wake-up and its next wait.
            await asyncio.sleep(0)
            self.set_exception(exc)
        else:
            self.feed_eof()


class _Flow(BaseProtocol):
    """What a `DecodedBody` pauses and resumes as its reader lags and catches up: its inflating."""

    __slots__ = ("_connection", "_wanted")

    def __init__(self, connection: BaseProtocol) -> None:
        super().__init__(asyncio.get_running_loop())
        self._connection = connection
        self._wanted = asyncio.Event()
        self._wanted.set()

    @property
    def connected(self) -> bool:
        return self._connection.connected

    def pause_reading(self) -> None:
        self._wanted.clear()

    def resume_reading(self, resume_parser: bool = True) -> None:
        self._wanted.set()

    async def wanted(self) -> None:
        await self._wanted.wait()


class _Inflater:
    """One body's gzip or deflate stream, inflated in pieces, refused as soon as it inflates too far."""

    def __init__(self, coding: str) -> None:
        if coding not in _WBITS:
            raise InvalidArgument(
                f"We cannot decode a request body whose Content-Encoding is {coding}: send it as gzip, deflate or"
                " uncompressed."
            )
        self._coding = coding
        self._stream: Any = None  # zlib's Decompress object of the current gzip member or deflate stream
        self._members = 0
        self._taken = 0  # compressed bytes received
        self._given = 0  # bytes inflated

    def inflate(self, data: bytes) -> Iterator[bytes]:
        self._taken += len(data)
        more = True
        while data or more:
            stream = self._current(data)
            try:
                piece = stream.decompress(data, _PIECE)
            except zlib.error:
                raise undecodable_body() from None
            data = stream.unused_data if stream.eof else stream.unconsumed_tail
            more = len(piece) == _PIECE and not stream.eof  # zlib may hold more output for no more input
            self._given += len(piece)
            if self._given > _FREE + RATIO * (self._taken - len(data)):
                raise _inflates_too_far()
            if piece:
                yield piece

    def finish(self) -> None:
        """At the end of the compressed body: its stream must have ended (no stream at all is an empty body)."""
        if self._stream is not None and not self._stream.eof:
            raise InvalidArgument(
                f"The request body ends before its {self._coding} stream (its Content-Encoding) does: was it cut"
                " short? None of it was used."
            )

    def _current(self, data: bytes) -> Any:
        stream = self._stream
        if stream is not None and not stream.eof:
            return stream
        if stream is not None and self._coding == "deflate":
            raise InvalidArgument(
                "The request body goes on after the end of its deflate stream (its Content-Encoding)."
            )
        self._members += 1
        if self._members > _MEMBERS:
            raise InvalidArgument(
                f"The request body's gzip stream (its Content-Encoding) has more than {_MEMBERS} members."
            )
        wbits = _WBITS[self._coding]
        if self._coding == "deflate" and data[:1] and data[0] & 0x0F != 8:  # no zlib header: raw deflate, as aiohttp
            wbits = -zlib.MAX_WBITS
        self._stream = zlib.decompressobj(wbits)
        return self._stream


def _inflates_too_far() -> PayloadTooLarge:
    return PayloadTooLarge(
        f"Request body too large: it inflates more than {RATIO}-fold past its first MiB (send it less compressed,"
        " or uncompressed)."
    )
