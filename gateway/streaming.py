"""Server-sent events passed through chunk by chunk, with usage taken out on the way.

The gateway always asks the upstream for `stream_options.include_usage`, so every stream is metered. When the client
did not ask for usage, the usage-only chunk is dropped and `usage` fields are removed from the others. A stream that
fails mid-way ends with an OpenAI error event (`data: {"error": {...}}`), never a silent cut; an error event from
the upstream is replaced by our own friendly one, and so is an event that is not a JSON object (`_event`). Every
chunk's `model` is the id the client asked for, not the upstream's internal one. An upstream that sends nothing for
`SWITCHBOARD_GATEWAY_UPSTREAM_STALL_SECONDS` is cut off (by the upstream client, `server.upstream_http`, whose one
sweeping timer watches every connection in flight) and the stream ends with that error event.

The text relayed is measured on the way (`_text_size`, by substring searches, without parsing; in the relay one read
in `_SAMPLED`, scaled to the bytes of all) and estimated in tokens as a request's input is (bytes / 4, and at least a
token per text value where it is measured, per event of a read that is not, as upstreams stream about a token a
chunk; an event without text, such as a role-only first chunk or an error, is no token), so a
stream cut off before its usage arrived (the client went away) settles its rate-limit reservation to what it relayed
when that is more than it reserved (gateway.calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web

from gateway.calls import CLIENT_CLOSED, Call
from gateway.event_stream import EventStream
from gateway.limits.estimate import text_tokens
from gateway.middleware import error_payload
from gateway.providers import invalid_answer
from server.errors import UpstreamFailed
from server.upstream_http import UpstreamBroke, UpstreamResponse

__all__ = ["chat_chunks", "relay_sse"]

log = logging.getLogger("switchboard.gateway.stream")

_DONE = b"data: [DONE]\n\n"
_DRAIN_SECONDS = 1.0
_DRAIN_LIMIT = 64 * 1024  # what may follow [DONE] before the connection is given up on
_BROKEN = UpstreamFailed("The model backend stopped responding in the middle of the stream.", retryable=True)
_REFUSED = UpstreamFailed("The model backend failed while generating this response.", retryable=False)
_INVALID = invalid_answer()  # a chunk that is not a JSON object


@functools.lru_cache(maxsize=1024)
def _needle(model: str) -> bytes:
    """`"model":"<id>"` as compact JSON, the form OpenAI and vLLM stream."""
    return b'"model":' + orjson.dumps(model)


# The id each upstream model id was last streamed back under, when another (a dated snapshot, a served alias): each
# stream starts from it rather than learning it again from a parsed chunk. Bounded: cleared when it fills.
_SERVED: dict[str, bytes] = {}
_SERVED_MAX = 1024


class _Names:
    """Makes every `"model"` in the forwarded bytes name the id the client asked for, by a byte swap where it can.

    Inside JSON strings quotes are escaped, so a raw `"model"` is never content: when every `"model"` in some bytes
    is the compact `"model":"<id>"` of one known upstream id, swapping those bytes is exact. The upstream id starts as
    the one we sent; when the upstream names another (a dated snapshot, a served alias), the first chunk that has to
    be parsed teaches it, so the rest of the stream, and the next streams of that upstream id, are swapped, not
    parsed."""

    __slots__ = ("asked", "model", "sent", "upstream")

    def __init__(self, model: str, upstream_model: str) -> None:
        self.model = model
        self.sent = upstream_model
        self.asked = _needle(model)
        self.upstream = _SERVED.get(upstream_model) or _needle(upstream_model)

    def swapped(self, data: bytes) -> bytes | None:
        """These bytes naming the id asked for, or None when they must be parsed. The upstream's id is looked for
        first: it is the one usually there."""
        models = data.count(b'"model"')
        if models == data.count(self.upstream):
            return data.replace(self.upstream, self.asked) if models and self.upstream != self.asked else data
        if models == data.count(self.asked):
            return data
        return None

    def learn(self, payload: bytes, named: object) -> None:
        """Remember the id a parsed chunk named, when these bytes show it in the compact form."""
        if isinstance(named, str) and named != self.model:
            needle = _needle(named)
            if payload.count(b'"model"') == payload.count(needle):
                self.upstream = needle
                if len(_SERVED) >= _SERVED_MAX:
                    _SERVED.clear()
                _SERVED[self.sent] = needle


def _event(payload: bytes, call: Call, include_usage: bool, names: _Names) -> bytes | None:
    """The event to forward for one upstream `data:` payload (None drops it); raises UpstreamFailed on errors and on
    a payload that is not a JSON object (an HTML error page a proxy slipped into the stream): no client could parse
    it. Only a payload that opens and closes as an object (`{` ... `}`) may be forwarded without parsing; any other
    is parsed, which tells a JSON object written otherwise (with spaces around it) from one that is not."""
    if payload.startswith(b"{") and payload.endswith(b"}"):
        cleaned = _cleaned(payload, include_usage, names)
        if cleaned is not None:
            return b"data: " + cleaned + b"\n\n"
    try:
        chunk: Any = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise _INVALID from None
    if not isinstance(chunk, dict):
        raise _INVALID
    if chunk.get("error"):
        raise _REFUSED
    usage = chunk.get("usage")
    if usage:
        call.count(usage)
        if not include_usage and not chunk.get("choices"):
            return None  # the usage-only chunk the client did not ask for
    if "model" in chunk and chunk["model"] != call.model:
        names.learn(payload, chunk["model"])
        chunk["model"] = call.model
        payload = names.swapped(payload) or orjson.dumps(chunk)
    if include_usage:
        return b"data: " + payload + b"\n\n"
    chunk.pop("usage", None)
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


_NULL_USAGE = b',"usage":null'
_ENDS = (b'"error"', b"[DONE]")  # what ends a stream, and so must be parsed
_USAGE = b'"usage"'
_NULL = b":null"


def _special_at(data: bytes) -> int:
    """Where the first thing that must be parsed starts (len(data) when there is none): a usage that may carry
    counts (anything but the compact `"usage":null` OpenAI puts in every chunk of a stream with include_usage), an
    error, the end of the stream. Plain substring searches: a regex alternation tries every alternative at every
    byte, several times slower on every chunk of every stream."""
    at = len(data)
    for needle in _ENDS:
        found = data.find(needle, 0, at)
        if found >= 0:
            at = found
    found = data.find(_USAGE, 0, at)
    while found >= 0 and data.startswith(_NULL, found + len(_USAGE)):
        found = data.find(_USAGE, found + len(_USAGE), at)
    return found if found >= 0 else at


def _cleaned(data: bytes, include_usage: bool, names: _Names) -> bytes | None:
    """One event's data as the client gets it, without parsing; None when it must be parsed (an error, [DONE], see
    `_unparsed`)."""
    if _ends(data):
        return None
    return _unparsed(data, include_usage, names)


def _ends(data: bytes) -> bool:
    """Whether these bytes may hold an error or the [DONE] that ends the stream."""
    return _ENDS[0] in data or _ENDS[1] in data


def _translated(data: bytes, include_usage: bool, names: _Names) -> bytes | None:
    """Whole events holding no error and no [DONE] as the client gets them, without parsing; None when they must be
    parsed: not all standard single-line `data: {...}` events (LF line ends), or see `_unparsed`. Each event must
    open and close as a JSON object does (counting `}\n\n` costs what counting `\n\n` did), so a payload that is not
    JSON (an HTML page, text, one cut short) goes to `_event`, which refuses it; one broken in between its braces
    would need every chunk parsed to be told apart, the cost this path is here to avoid."""
    if not (
        data.startswith(b"data: {")
        and data.endswith(b"}\n\n")
        and data.count(b"\n") == 2 * data.count(b"}\n\n") == 2 * data.count(b"data: {")
    ):
        return None
    return _unparsed(data, include_usage, names)


def _unparsed(data: bytes, include_usage: bool, names: _Names) -> bytes | None:
    """Null usage fields removed unless the client asked for usage, every model the id it asked for; None for a
    usage that may carry counts (or a null one in another form) or a model field that must be parsed."""
    if _USAGE in data:
        stripped = data.replace(_NULL_USAGE, b"")
        if _USAGE in stripped:
            return None
        if not include_usage:
            data = stripped
    return names.swapped(data)


# The fields whose string values are the text a chunk carries: `content` (and `reasoning_content`), a tool call's
# `arguments`, a `refusal`, `reasoning`. Inside a JSON string a quote is escaped, so `content":` is always a key.
_TEXT_FIELDS = tuple((name, len(name)) for name in (b'content":', b'arguments":', b'refusal":', b'reasoning":'))
_BACKSLASH = 0x5C
_SAMPLED = 16  # the relay measures the text of one upstream read in this many (bytes are counted in every read)


def _text_size(data: bytes) -> tuple[int, int]:
    """The bytes of text these events carry and in how many values, without parsing them: the string values of the
    text fields (`"content":null` carries none). A few substring tests of each upstream read."""
    size = pieces = 0
    for name, length in _TEXT_FIELDS:
        at = data.find(name)
        while at >= 0:
            start = at + length
            if data.startswith(b'"', start):
                start += 1
            elif data.startswith(b' "', start):  # JSON written with a space after its colons
                start += 2
            else:
                at = data.find(name, start)
                continue
            end = data.find(b'"', start)
            while end > 0 and data[end - 1] == _BACKSLASH and _escaped(data, end):
                end = data.find(b'"', end + 1)
            if end < 0:  # cut off inside the value
                end = len(data)
            if end > start:
                size += end - start
                pieces += 1
            at = data.find(name, end)
    return size, pieces


def _relayed_tokens(size: int, sampled: int, text_size: int, least: int) -> int:
    """The output tokens of a stream that read `size` bytes, of which `sampled` bytes carried `text_size` bytes of
    text: that text scaled to all it read, counted as the input is (bytes / 4), and at least `least` (upstreams
    stream about one token an event, so a sample with less text than the rest, such as a last event with none,
    cannot make it fall short)."""
    scaled = text_tokens(text_size * size // sampled) if sampled else 0
    return max(scaled, least)


def _token_events(data: bytes, ends: bool) -> int:
    """How many of these whole events may carry a token: all but an error and the [DONE] that ends the stream
    (`ends`: `_ends(data)`, which the relay asks once a read)."""
    events = data.count(b"\n\n")
    return max(0, events - data.count(_ENDS[0]) - data.count(_ENDS[1])) if ends else events


def _escaped(data: bytes, quote: int) -> bool:
    """Whether the quote at `quote` is escaped: preceded by an odd number of backslashes."""
    before = quote - 1
    while before >= 0 and data[before] == _BACKSLASH:
        before -= 1
    return (quote - 1 - before) % 2 == 1


def _plain_head(complete: bytes) -> int:
    """Where the events before the first one that must be parsed end (0 when there are none)."""
    found = _special_at(complete)
    if found == len(complete):
        return found
    cut = complete.rfind(b"\n\n", 0, found)
    return cut + 2 if cut >= 0 else 0


async def _error_event(out: web.StreamResponse, error: UpstreamFailed) -> None:
    await out.write(b"data: " + orjson.dumps(error_payload(error)) + b"\n\n")


def _payload(event: bytes) -> bytes:
    """The data of one SSE event (its `data:` lines joined by newlines); other fields and comments are dropped."""
    if event.startswith(b"data: ") and b"\n" not in event:
        return event[6:]  # the usual single-line event
    lines = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines)


async def _relay(upstream: UpstreamResponse, out: EventStream, call: Call, include_usage: bool) -> bytes | None:
    """Forward events as they arrive (one write per upstream read); when the upstream ended with [DONE], the last
    events and [DONE], left for the end of the body. What was read counts in `call.relayed`, forwarded or not
    (the upstream produced it): its bytes, and the text measured in one read of `_SAMPLED`, scaled to them."""
    pending = b""
    names = _Names(call.model, call.route.upstream_model_id if call.route else call.model)
    # Bytes read; the output tokens they hold at least (a token a text value in a measured read, a token an event in
    # the others: an error event or a role-only chunk carries none); reads left to skip; bytes measured, their text.
    size = least = skip = sampled = text_size = 0
    try:
        async for data in upstream.chunks():
            if not call.first_chunk_at:
                call.first_chunk_at = time.perf_counter()
            text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data
            if pending:
                text = pending + text
            end = text.rfind(b"\n\n") + 2
            if end < 2:
                pending = text
                continue
            if end == len(text):  # the usual read: whole events
                complete, pending = text, b""
            else:  # an incomplete last event waits for the next read
                complete, pending = text[:end], text[end:]
            size += len(complete)
            ends = _ends(complete)
            floor = _token_events(complete, ends)  # about a token an event, in a read not measured
            skip -= 1
            if skip < 0:  # the first read, then one in _SAMPLED: measuring every read would cost half of this loop
                measured, floor = _text_size(complete)  # in one measured, a token a text value
                skip, sampled, text_size = _SAMPLED - 1, sampled + len(complete), text_size + measured
            least += floor
            if not ends:
                block = _translated(complete, include_usage, names)
                if block is not None:  # the usual read: whole events, forwarded without parsing
                    await out.write(block)
                    continue
            # The plain events before the first that must be parsed (on the last read all but usage and [DONE]) go
            # as one block, translated without parsing.
            at = _plain_head(complete)
            head = _translated(complete[:at], include_usage, names) if at else None
            if head is None:
                at = 0
            events = complete[at:].split(b"\n\n")[:-1]
            last = await _forward(out, events, call, include_usage, names, head=head or b"")
            if last is not None:
                return last
        size += len(pending)
        return await _forward(out, [pending.strip()], call, include_usage, names) if pending.strip() else None
    finally:
        call.relayed = _relayed_tokens(size, sampled, text_size, least)  # this model call's one stream


async def _forward(
    out: EventStream, events: list[bytes], call: Call, include_usage: bool, names: _Names, *, head: bytes = b""
) -> bytes | None:
    """Write `head` (already translated) and these events (translated) in one write; when they end with [DONE],
    write nothing and return them with it instead: the last events and the end of the body then leave in one write
    (one system call; with the headers too when nothing was written before, as when the whole stream came in one
    read)."""
    batch: list[bytes] = [head]
    for event in events:
        payload = _payload(event)
        if not payload:
            continue  # a comment or a keep-alive
        if payload.startswith(b"[DONE]"):
            return b"".join((*batch, _DONE))
        try:
            forwarded = _event(payload, call, include_usage, names)
        except UpstreamFailed:
            await out.write(b"".join(batch))  # what came before the failure still reaches the client
            raise
        if forwarded is not None:
            batch.append(forwarded)
    block = b"".join(batch)
    if block:
        await out.write(block)
    return None


async def relay_sse(
    request: web.Request, upstream: UpstreamResponse, call: Call, *, include_usage: bool, ends_with_done: bool = True
) -> web.StreamResponse:
    """Relay the upstream's stream to the client. A chat stream ends with [DONE]; one whose upstream body ends first
    was cut short and ends with an error event. `ends_with_done=False` is for streams that have no [DONE] (OpenAI's
    transcription events end with `transcript.text.done`): the end of the upstream's body ends them, and only a body
    that breaks off ends with the error event."""
    out = EventStream()
    await out.prepare(request)
    try:
        try:
            last = await _relay(upstream, out, call, include_usage)
            if last is None and not ends_with_done:
                last = b""
        except UpstreamFailed as exc:
            await _error_event(out, exc)
            call.status = 502
            return out
        except UpstreamBroke:
            log.warning("upstream stream of %s broke", call.route.ref.name if call.route else "?")
            last = None
        if last is None:
            await _error_event(out, _BROKEN)
            call.status = 502
            return out
        out.end(last)
        await _drain(upstream)
    except ConnectionError:
        call.status = CLIENT_CLOSED  # the client went away; nothing left to tell it
    finally:
        upstream.release()
        call.response_bytes = out.length
    return out


async def _drain(upstream: UpstreamResponse) -> None:
    """Read the little that follows [DONE] (the end of the chunked body), so the pooled upstream connection is
    reused rather than closed; an upstream that keeps the stream open after [DONE] is given up on after a second."""
    if upstream.at_eof:
        return
    with contextlib.suppress(TimeoutError, UpstreamBroke):
        async with asyncio.timeout(_DRAIN_SECONDS):  # a timer, not wait_for's extra task per stream
            await upstream.read(_DRAIN_LIMIT)


async def chat_chunks(upstream: UpstreamResponse, call: Call | None = None) -> AsyncIterator[dict[str, Any]]:
    """The parsed `data:` payloads of an upstream chat stream, until [DONE]; an upstream error event, an event that is
    not a JSON object or a stream that ends without [DONE] raises UpstreamFailed (friendly text only). With `call`,
    the text of each counts in `call.relayed` as it is read (as `relay_sse` counts it)."""
    pending = b""
    size = pieces = 0
    try:
        async for data in upstream.chunks():
            text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data
            *events, pending = (pending + text).split(b"\n\n")
            for event in events:
                payload = _payload(event)
                if not payload:
                    continue
                if call is not None:  # every event measured: each is parsed anyway
                    grown, more = _text_size(payload)
                    if more:  # kept current event by event: the consumer may stop reading at any one
                        size, pieces = size + grown, pieces + more
                        call.relayed = max(text_tokens(size), pieces)
                if payload.startswith(b"[DONE]"):
                    return
                try:
                    chunk = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    raise _INVALID from None  # as in the relay: a chunk that is not JSON is the backend's failure
                if not isinstance(chunk, dict):
                    raise _INVALID
                if chunk.get("error"):
                    raise _REFUSED
                yield chunk
    except UpstreamBroke:
        raise _BROKEN from None
    raise _BROKEN
