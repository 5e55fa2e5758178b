"""The stream relay's translation, byte for byte, however the upstream's bytes are cut into reads: every `model`
names the id asked for, the null usage fields and the usage-only chunk reach only a client that asked for usage, the
usage is counted either way, [DONE] ends the body (left, with the events before it, for the end of the body),
comments and CRs do not reach the client, an error event stops the stream after what came before it, and so does an
event that is not a JSON object (once forwarded as it was, and the stream went on to [DONE]: the SDK died on it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import orjson
import pytest

from gateway.streaming import _relay
from server.errors import UpstreamFailed

_HEAD = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"up-model",'
_TOKEN = _HEAD + b'"choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}],"usage":null}\n\n'
_USAGE = _HEAD + b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}\n\n'
_DONE = b"data: [DONE]\n\n"
STREAM = _TOKEN * 3 + _USAGE + _DONE

_OUT_HEAD = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"asked",'
_OUT_TOKEN = _OUT_HEAD + b'"choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]'
WITHOUT_USAGE = (_OUT_TOKEN + b"}\n\n") * 3 + _DONE
_OUT_USAGE = _OUT_HEAD + b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}\n\n'
WITH_USAGE = (_OUT_TOKEN + b',"usage":null}\n\n') * 3 + _OUT_USAGE + _DONE


class _Upstream:
    """The upstream answer's reads, as `UpstreamResponse.chunks` yields them."""

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def chunks(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read


class _Out:
    """What the client gets: the writes, then what the relay left for the end of the body."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.ended = False

    async def write(self, data: bytes) -> None:
        assert not self.ended
        self.sent.append(data)

    def end(self, last: bytes | None) -> None:
        if last is not None:
            self.sent.append(last)
            self.ended = True

    def received(self) -> bytes:
        return b"".join(self.sent)


class _Route:
    upstream_model_id = "up-model"


class _Call:
    model = "asked"
    route = _Route()

    def __init__(self) -> None:
        self.usages: list[dict[str, int]] = []
        self.first_chunk_at = 0.0

    def count(self, usage: dict[str, int]) -> None:
        self.usages.append(usage)


async def _relayed(reads: list[bytes], include_usage: bool) -> tuple[bool, _Out, _Call]:
    out, call = _Out(), _Call()
    out.end(await _relay(cast(Any, _Upstream(reads)), cast(Any, out), cast(Any, call), include_usage))
    return out.ended, out, call


def _cuts(data: bytes) -> list[list[bytes]]:
    """The stream in one read, byte by byte, and cut in two at every position."""
    return [[data], [data[i : i + 1] for i in range(len(data))]] + [[data[:i], data[i:]] for i in range(1, len(data))]


@pytest.mark.parametrize("include_usage", [False, True])
async def test_any_cut_into_reads_gives_the_same_bytes(include_usage: bool) -> None:
    expected = WITH_USAGE if include_usage else WITHOUT_USAGE
    for reads in _cuts(STREAM):
        done, out, call = await _relayed(reads, include_usage)
        assert done and out.ended
        assert out.received() == expected, reads
        assert call.usages == [{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}]


@pytest.mark.parametrize("include_usage", [False, True])
async def test_crlf_framing_and_comments_are_not_forwarded(include_usage: bool) -> None:
    framed = b": keep-alive\r\n\r\n" + STREAM.replace(b"\n", b"\r\n")
    for reads in ([framed], [framed[:40], framed[40:]], [framed[i : i + 7] for i in range(0, len(framed), 7)]):
        done, out, _ = await _relayed(reads, include_usage)
        assert done
        assert out.received() == (WITH_USAGE if include_usage else WITHOUT_USAGE)


async def test_the_last_events_and_done_end_the_body_in_one_write() -> None:
    _, out, _ = await _relayed([_TOKEN, _TOKEN * 2 + _USAGE + _DONE], include_usage=False)
    assert out.sent == [_OUT_TOKEN + b"}\n\n", (_OUT_TOKEN + b"}\n\n") * 2 + _DONE]


async def test_a_stream_without_done_is_not_ended() -> None:
    done, out, call = await _relayed([_TOKEN, _USAGE.rstrip(b"\n")], include_usage=True)
    assert not done and not out.ended
    assert out.received() == _OUT_TOKEN + b',"usage":null}\n\n' + _OUT_USAGE
    assert call.usages


async def test_an_error_event_stops_the_stream_after_what_came_before() -> None:
    error = b'data: {"error":{"message":"upstream secret detail"}}\n\n'
    for reads in ([_TOKEN + error + _DONE], [_TOKEN, error, _DONE]):
        out = _Out()
        with pytest.raises(UpstreamFailed):
            await _relay(cast(Any, _Upstream(reads)), cast(Any, out), cast(Any, _Call()), False)
        assert out.received() == _OUT_TOKEN + b"}\n\n"
        assert not out.ended


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"<html><body>502 Bad Gateway</body></html>", id="html"),
        pytest.param(b"upstream connect error", id="text"),
        pytest.param(b"[1, 2]", id="an-array"),
        pytest.param(b"42", id="a-number"),
        pytest.param(b'{"id":"c","object":"chat.completion.chunk","choices":[', id="an-object-cut-short"),
    ],
)
async def test_an_event_that_is_not_a_json_object_stops_the_stream_after_what_came_before(payload: bytes) -> None:
    event = b"data: " + payload + b"\n\n"
    for reads in ([_TOKEN + event + _TOKEN + _DONE], [_TOKEN, event, _TOKEN, _DONE], *_cuts(_TOKEN + event + _DONE)):
        out = _Out()
        with pytest.raises(UpstreamFailed, match="invalid response"):
            await _relay(cast(Any, _Upstream(reads)), cast(Any, out), cast(Any, _Call()), False)
        assert out.received() == _OUT_TOKEN + b"}\n\n", reads
        assert not out.ended


def _events(stream: bytes) -> list[Any]:
    """The JSON payloads of a stream's events, however written."""
    payloads = [event.strip()[5:].strip() for event in stream.split(b"\n\n")]
    return [orjson.loads(payload) for payload in payloads if payload and payload != b"[DONE]"]


async def test_a_json_object_written_with_spaces_around_it_still_goes() -> None:
    """The guard of the rule above: only what is not a JSON object is refused, however the object is spaced."""
    spaced = b"data:  " + _TOKEN[6:-2] + b" \n\n"
    for reads in ([spaced * 3 + _USAGE + _DONE], [spaced, spaced, spaced, _USAGE, _DONE]):
        done, out, _ = await _relayed(reads, include_usage=False)
        assert done and out.received().endswith(_DONE), reads
        assert _events(out.received()) == _events(WITHOUT_USAGE), reads


async def test_an_upstream_that_streams_under_another_name_is_renamed_in_every_stream() -> None:
    dated = STREAM.replace(b'"model":"up-model"', b'"model":"up-model-2024-08-06"')
    for reads in [[dated], *_cuts(dated), [dated]]:
        _, out, _ = await _relayed(reads, include_usage=True)
        assert out.received() == WITH_USAGE
    for stream in (STREAM, dated, STREAM.replace(b'"model":"up-model"', b'"model":"asked"')):
        _, out, _ = await _relayed([stream], include_usage=False)
        assert out.received() == WITHOUT_USAGE
