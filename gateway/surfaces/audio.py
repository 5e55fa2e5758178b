"""POST /v1/audio/transcriptions: multipart in, json / verbose_json / text / srt / vtt out, up to 128 MiB.

The form is read part by part with a running size cap (and a bound on its parts, `gateway.multipart`), its text
fields decoded by the charset their parts declare; the `model` field is swapped for the provider's id, and the
upstream's answer is passed back with its content type (text formats are `text/plain`, which the SDK returns as str).
A streamed transcription (`stream=true`: server-sent events, OpenAI's ending with `transcript.text.done` and no
[DONE]) is relayed as it arrives, like a chat stream (`gateway.streaming`), and metered by the usage of its events.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
import orjson
from aiohttp import web

from gateway.calls import metered
from gateway.capture import CAPTURE, form_summary
from gateway.catalog import TaskType
from gateway.context import HTTP, PRINCIPAL, REQUEST_BYTES, TRANSLATORS
from gateway.middleware import TRANSCRIPTION_LIMIT, refuse_nul, too_large
from gateway.multipart import decoded_text, form_errors, form_parts, part_content_type, part_names
from gateway.providers import Surface, invalid_answer, open_upstream, read_answer
from gateway.streaming import relay_sse
from gateway.surfaces._upstream import as_requested, require_task
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["transcriptions"]

_FORMATS = frozenset({"json", "text", "srt", "verbose_json", "vtt", "diarized_json"})
# What a transcript in a text format comes as (OpenAI and vLLM send text/plain).
_TEXT_TYPES = frozenset({"text/plain", "text/vtt", "text/srt", "application/x-subrip"})

# The most parts a transcription form has: `file`, `model` and OpenAI's other fields (`timestamp_granularities[]` twice,
# `include[]`, `chunking_strategy` as up to four bracketed fields, up to four `known_speaker_names[]` and as many
# `known_speaker_references[]`) with vLLM's sampling extras come to about 35.
_MAX_PARTS = 64


@dataclass
class _Field:
    name: str
    value: bytes  # the part's bytes as sent
    filename: str | None  # None for a text field
    content_type: str | None
    text: str = ""  # a text field's value, decoded by its part's Content-Transfer-Encoding and charset


async def _read_form(request: web.Request, limit: int) -> list[_Field]:
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    if not request.content_type.startswith("multipart/"):
        raise InvalidArgument("Transcription requests must be multipart/form-data.", field="file")
    fields: list[_Field] = []
    size = 0
    with form_errors():
        async for part in form_parts(request, _MAX_PARTS):
            name, filename = part_names(part)  # a control character in either would fail the upstream form
            chunks: list[bytes] = []
            while chunk := await part.read_chunk(1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                chunks.append(chunk)
            field = _Field(name or "", b"".join(chunks), filename, part_content_type(part))
            if filename is None:
                field.text = decoded_text(part, field.value, field.name or "file")
            fields.append(field)
    request[REQUEST_BYTES] = size
    exchange = request.get(CAPTURE)
    if exchange is not None:
        summary = [
            (f.name, f.text.encode() if f.filename is None else f.value, f.filename, f.content_type) for f in fields
        ]
        exchange.request(form_summary(summary))
    return fields


def _text(fields: list[_Field], name: str) -> str | None:
    for f in fields:
        if f.name == name and f.filename is None:
            return f.text
    return None


def _validated_model(fields: list[_Field]) -> str:
    for f in fields:  # a form's text fields are held to a JSON body's rule (`model` is looked up in the database)
        if f.filename is None:
            refuse_nul({f.name: f.text})
    model = _text(fields, "model")
    if not model:
        raise InvalidArgument("you must provide a model parameter", field="model")
    if not any(f.name == "file" and f.filename is not None for f in fields):
        raise InvalidArgument("you must provide an audio file", field="file")
    if (_text(fields, "response_format") or "json") not in _FORMATS:
        raise InvalidArgument("'response_format' is not a supported format.", field="response_format")
    temperature = _text(fields, "temperature")
    if temperature is not None and not _in_unit_range(temperature):
        raise InvalidArgument("'temperature' must be a number between 0 and 1.", field="temperature")
    return model


def _in_unit_range(text: str) -> bool:
    try:
        return 0 <= float(text) <= 1
    except ValueError:
        return False


async def _upstream_form(fields: list[_Field], upstream_model: str | None) -> tuple[bytes, str]:
    """The form to send upstream, encoded: (body, its multipart Content-Type with the boundary)."""
    form = aiohttp.FormData()
    for f in fields:
        if f.name == "model":
            if upstream_model is not None:
                form.add_field("model", upstream_model)
        elif f.filename is None:
            form.add_field(f.name, f.text)
        else:
            form.add_field(f.name, f.value, filename=f.filename, content_type=f.content_type)
    payload = form()
    return await payload.as_bytes(), payload.content_type


async def transcriptions(request: web.Request) -> web.StreamResponse:
    async with metered(request, CallKind.TRANSCRIPTION) as call:
        fields = await _read_form(request, TRANSCRIPTION_LIMIT)
        model = _validated_model(fields)
        route = await call.resolve(model)
        require_task(route, TaskType.SPEECH_TO_TEXT)
        translator = request.app[TRANSLATORS][route.provider]
        form, content_type = await _upstream_form(fields, translator.form_model(route))
        resp = await open_upstream(
            request.app[HTTP],
            "POST",
            translator.url(route, Surface.TRANSCRIPTIONS),
            headers={**translator.headers(route), "Content-Type": content_type},
            body=form,
            route=route,
            principal=request[PRINCIPAL],
        )
        if resp.content_type == "text/event-stream":
            # Events pass through as they are (they carry the usage), whether OpenAI's (no [DONE]) or vLLM's.
            return await relay_sse(request, resp, call, include_usage=True, ends_with_done=False)
        body = await read_answer(resp, Surface.TRANSCRIPTIONS)
        content_type = resp.content_type or "application/json"
        if content_type.endswith("json"):
            try:
                parsed = orjson.loads(body)
            except orjson.JSONDecodeError:
                raise invalid_answer() from None
            if not isinstance(parsed, dict) or parsed.get("error") or not isinstance(parsed.get("text"), str):
                raise invalid_answer()  # an error sent with HTTP 200 is the backend's failure, never relayed
            call.count(parsed.get("usage"))
            body = as_requested(body, parsed, model, always=False)  # OpenAI's transcription JSON has no model
            call.response_bytes = len(body)
            return web.Response(body=body, content_type=content_type)
        if content_type not in _TEXT_TYPES:  # a proxy's HTML error page is no transcript
            raise invalid_answer()
        call.response_bytes = len(body)
        return web.Response(body=body, content_type=content_type, charset=resp.charset)
