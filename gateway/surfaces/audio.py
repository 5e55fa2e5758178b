"""POST /v1/audio/transcriptions: multipart in, json / verbose_json / text / srt / vtt out, up to 128 MiB.

The form is read part by part with a running size cap, the `model` field is swapped for the provider's id, and the
upstream's answer is passed back with its content type (text formats are `text/plain`, which the SDK returns as str).
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
from gateway.multipart import form_errors, part_names
from gateway.providers import Surface, invalid_answer, open_upstream, read_answer
from gateway.surfaces._upstream import as_requested, require_task
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["transcriptions"]

_FORMATS = frozenset({"json", "text", "srt", "verbose_json", "vtt", "diarized_json"})


@dataclass
class _Field:
    name: str
    value: bytes
    filename: str | None
    content_type: str | None


async def _read_form(request: web.Request, limit: int) -> list[_Field]:
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    if not request.content_type.startswith("multipart/"):
        raise InvalidArgument("Transcription requests must be multipart/form-data.", field="file")
    fields: list[_Field] = []
    size = 0
    with form_errors():
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, aiohttp.BodyPartReader):
                raise InvalidArgument("Nested multipart bodies are not supported.", field="file")
            name, filename = part_names(part)  # a control character in either would fail the upstream form
            chunks: list[bytes] = []
            while chunk := await part.read_chunk(1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                chunks.append(chunk)
            fields.append(_Field(name or "", b"".join(chunks), filename, part.headers.get("Content-Type")))
    request[REQUEST_BYTES] = size
    exchange = request.get(CAPTURE)
    if exchange is not None:
        exchange.request(form_summary([(f.name, f.value, f.filename, f.content_type) for f in fields]))
    return fields


def _text(fields: list[_Field], name: str) -> str | None:
    for f in fields:
        if f.name == name and f.filename is None:
            return f.value.decode(errors="replace")
    return None


def _validated_model(fields: list[_Field]) -> str:
    for f in fields:  # a form's text fields are held to a JSON body's rule (`model` is looked up in the database)
        if f.filename is None:
            refuse_nul({f.name: f.value.decode(errors="replace")})
    model = _text(fields, "model")
    if not model:
        raise InvalidArgument("you must provide a model parameter", field="model")
    if not any(f.name == "file" and f.filename is not None for f in fields):
        raise InvalidArgument("you must provide an audio file", field="file")
    if (_text(fields, "response_format") or "json") not in _FORMATS:
        raise InvalidArgument("'response_format' is not a supported format.", field="response_format")
    return model


async def _upstream_form(fields: list[_Field], upstream_model: str | None) -> tuple[bytes, str]:
    """The form to send upstream, encoded: (body, its multipart Content-Type with the boundary)."""
    form = aiohttp.FormData()
    for f in fields:
        if f.name == "model":
            if upstream_model is not None:
                form.add_field("model", upstream_model)
        elif f.filename is None:
            form.add_field(f.name, f.value.decode(errors="replace"))
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
        body = await read_answer(resp, Surface.TRANSCRIPTIONS)
        content_type = resp.content_type or "application/json"
        if content_type.endswith("json"):
            try:
                parsed = orjson.loads(body)
            except orjson.JSONDecodeError:
                raise invalid_answer() from None
            if isinstance(parsed, dict):
                call.count(parsed.get("usage"))
                body = as_requested(body, parsed, model, always=False)  # OpenAI's transcription JSON has no model
            call.response_bytes = len(body)
            return web.Response(body=body, content_type=content_type)
        call.response_bytes = len(body)
        return web.Response(body=body, content_type=content_type, charset=resp.charset)
