"""A raw HTTP/1.1 exchange over a socket, for requests no client library will send (non-UTF-8 header values,
oversized headers, lying Content-Encoding, malformed framing, a body sent in part)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["RawResponse", "raw_exchange", "raw_request"]


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


async def raw_request(
    base_url: str, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
) -> RawResponse:
    url = urlsplit(base_url)
    lines = [f"{method} {path} HTTP/1.1".encode(), f"Host: {url.hostname}:{url.port}".encode()]
    lines += [name + b": " + value for name, value in headers]
    lines += [f"Content-Length: {len(body)}".encode(), b"Connection: close"]
    return await _exchange(base_url, b"\r\n".join(lines) + b"\r\n\r\n" + body, _read_answer)


async def raw_exchange(base_url: str, data: bytes) -> RawResponse:
    """Send `data` as it is (a request line, headers and any body, all up to the caller) and return the first
    answer, as soon as it is whole (by its Content-Length), with the connection still open: a request whose body
    is sent only in part is answered, or not, while the server still waits for the rest. TimeoutError if no whole
    answer comes within 30 seconds (`asyncio.timeout` for less)."""
    return await _exchange(base_url, data, _read_one_answer)


async def _exchange(
    base_url: str, data: bytes, read: Callable[[asyncio.StreamReader], Awaitable[bytes]]
) -> RawResponse:
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(data)
        await writer.drain()
        raw = await asyncio.wait_for(read(reader), 30)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return _parsed(raw)


async def _read_one_answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    if length is None:
        return head + await reader.read()
    return head + await reader.readexactly(int(length.group(1)))


def _parsed(raw: bytes) -> RawResponse:
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding") == "chunked":
        rest = _dechunk(rest)
    return RawResponse(int(status_line.split()[1]), parsed, rest)


async def _read_answer(reader: asyncio.StreamReader) -> bytes:
    """Everything up to the server's close. A server that answers before reading the whole body (a 413) closes with
    some of it unread, which resets the connection; the answer, whole by its Content-Length, is what was read."""
    raw = b""
    try:
        while chunk := await reader.read(1 << 16):
            raw += chunk
    except ConnectionResetError:
        head, _, rest = raw.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        if length is None or len(rest) < int(length.group(1)):
            raise
    return raw


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return out
