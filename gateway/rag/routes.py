"""HTTP shapes of the {rag_url} surfaces (the spec leaves them unshown; these follow OpenAI's list/file objects).

POST   /files                multipart: one or more `file` parts; optional `metadata` (JSON object, applies to
                             every file) and `external_id` (one file only)   → 201 {"object":"list","data":[file]}
GET    /files                ?limit=1..100&after=<cursor>&status=&include_total=true
                             &metadata.<key>=<value> (repeat a key for "any of") &filters=<JSON, see rag_filters>
                                                           → {"object":"list","data","has_more","next_cursor"[,"total"]}
GET    /files/{id}           → file;  DELETE → {"id","object":"rag.file.deleted","deleted":true}
PATCH  /files/{id}           {"metadata": {...}} replaces the metadata → file
POST   /files/content        {"files":[{"filename","content" | "content_base64","content_type"?,"metadata"?,
                             "external_id"?}]} (≤ 100)                              → 201 list of files
POST   /internal/files       scrapers: {"external_id","text","filename"?,"metadata"?} or {"files":[...]}; the
                             same external_id replaces the earlier file             → 201 list of files
POST   /context              {"query","top_k"?,"filters"?,"score_threshold"?,"weights"?:{"dense","lexical"}}
                             → {"object":"list","data":[{"text","score","file_id","filename","chunk_id",
                                "chunk_index","metadata"}]}
/content, /content/{id}      the deprecated counterparts of /files/content (POST), /files (GET) and /files/{id};
                             same requests and responses plus `Deprecation: true` and a successor Link.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import BodyPartReader, web

from gateway.context import DB, SETTINGS
from gateway.middleware import read_json, refuse_nul
from gateway.multipart import decoded_text, form_errors, form_parts, part_names
from gateway.rag import service
from gateway.rag.mcp import mcp_endpoint, mcp_lifespan
from server.domain import rag_files
from server.domain.json_values import is_integer, is_number
from server.domain.rag_filters import MetadataCondition, parse_filters
from server.errors import InvalidArgument, PayloadTooLarge, wire_error_for
from server.input_bounds import check_json_bounds
from server.store.rag_index import SearchWeights

__all__ = ["routes"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_MAX_BATCH = 100
# The most parts an upload has (gateway.multipart bounds them): its files, `metadata` and `external_id`, with room for
# a few more files, which are then refused as over `_MAX_BATCH` by name.
_MAX_PARTS = _MAX_BATCH + 16
_MAX_QUERY_CHARS = 8192


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _listing(files: list[rag_files.RagFile]) -> dict[str, Any]:
    return {"object": "list", "data": [service.file_json(f) for f in files]}


async def upload_files(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize_write(request)
    uploads = await _multipart(request, request.app[SETTINGS].rag_max_file_bytes)
    return _json(_listing(await service.ingest(request, rag, uploads)), status=201)


def _upload_limit(request: web.Request) -> int:
    """The most one upload request carries, its files together (a JSON body or a multipart form): twice one file's
    limit, so that small files go many to a request while no request is buffered whole past that. Without it a form
    of 100 files at the per-file limit held 6.4 GiB in a gateway worker."""
    return int(request.app[SETTINGS].rag_max_file_bytes) * 2


async def _multipart(request: web.Request, max_bytes: int) -> list[rag_files.Upload]:
    if not request.content_type.startswith("multipart/"):
        raise InvalidArgument("send files as multipart/form-data with one or more 'file' parts", field="file")
    files: list[tuple[str, str | None, bytes]] = []
    metadata: dict[str, Any] = {}
    external_id: str | None = None
    limit = _upload_limit(request)
    left = limit  # every part counts, the text fields too: each is buffered whole
    with form_errors():
        async for part in form_parts(request, _MAX_PARTS):
            field, filename = part_names(part)
            data = await _read_part(part, min(max_bytes, left) if field == "file" else left)
            if data is None:
                if field == "file" and left > max_bytes:
                    raise PayloadTooLarge(
                        f"{filename or 'upload'}: file is over the limit of {max_bytes} bytes", field="file"
                    )
                raise PayloadTooLarge(f"the upload is over the limit of {limit} bytes for one request", field="file")
            left -= len(data)
            if field == "file":
                files.append((filename or "upload", part.headers.get("Content-Type"), data))
            elif field == "metadata":
                try:
                    metadata = rag_files.validate_metadata(orjson.loads(data))
                except orjson.JSONDecodeError:
                    raise InvalidArgument("metadata must be a JSON object", field="metadata") from None
                refuse_nul({"metadata": metadata})  # as in a JSON body (validated: scalars or lists of them)
            elif field == "external_id":
                text = decoded_text(part, data, "external_id")
                external_id = _external_id(text.strip() or None, "external_id", required=False)
    if not files:
        raise InvalidArgument("no 'file' part in the upload", field="file")
    if len(files) > _MAX_BATCH:
        raise InvalidArgument(f"at most {_MAX_BATCH} files per upload", field="file")
    if external_id and len(files) > 1:
        raise InvalidArgument("external_id applies to a single file", field="external_id")
    return [rag_files.Upload(n, t, d, metadata=metadata, external_id=external_id) for n, t, d in files]


async def _read_part(part: BodyPartReader, limit: int) -> bytes | None:
    """The part's bytes as sent, or None once they pass `limit` (the rest is left unread)."""
    chunks, size = [], 0
    while chunk := await part.read_chunk(1 << 16):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def upload_content(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize_write(request)
    payload = await read_json(request, limit=_upload_limit(request))
    uploads = _each_external_id_once([_content_item(item, f"files[{i}]") for i, item in enumerate(_batch(payload))])
    return _json(_listing(await service.ingest(request, rag, uploads)), status=201)


def _batch(payload: dict[str, Any]) -> list[Any]:
    items = payload.get("files")
    if not isinstance(items, list) or not items:
        raise InvalidArgument("files must be a non-empty array", field="files")
    if len(items) > _MAX_BATCH:
        raise InvalidArgument(f"at most {_MAX_BATCH} files per request", field="files")
    return items


def _each_external_id_once(uploads: list[rag_files.Upload]) -> list[rag_files.Upload]:
    """A batch naming one external id twice is refused: storing the second file replaces the first, which the
    answer would list as ready though it is gone."""
    first: dict[str, str] = {}  # external id -> the item that named it first
    for upload in uploads:
        if upload.external_id is None:
            continue
        if upload.external_id in first:
            field = f"{upload.item}.external_id"
            raise InvalidArgument(f"{field} is {first[upload.external_id]}'s too", field=field)
        first[upload.external_id] = upload.item
    return uploads


def _content_item(item: Any, field: str) -> rag_files.Upload:
    if not isinstance(item, dict):
        raise InvalidArgument(f"{field} must be an object", field=field)
    filename = item.get("filename")
    if not isinstance(filename, str) or not filename.strip():
        raise InvalidArgument(f"{field}.filename is required", field=f"{field}.filename")
    rag_files.validate_filename(filename, f"{field}.filename")
    content_type = item.get("content_type") if isinstance(item.get("content_type"), str) else None
    rag_files.validate_content_type(content_type, filename, f"{field}.content_type")
    if isinstance(item.get("content"), str):
        data = item["content"].encode()
    elif isinstance(item.get("content_base64"), str):
        try:
            data = base64.b64decode(item["content_base64"], validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgument(f"{field}.content_base64 is not base64", field=f"{field}.content_base64") from None
    else:
        raise InvalidArgument(f"{field} needs content or content_base64", field=f"{field}.content")
    return rag_files.Upload(
        filename=filename,
        content_type=content_type,
        data=data,
        metadata=rag_files.validate_metadata(item.get("metadata"), f"{field}.metadata"),
        external_id=_external_id(item.get("external_id"), f"{field}.external_id", required=False),
        item=field,
        field=field,
    )


def _external_id(value: Any, field: str, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 512 or rag_files.has_control_characters(value):
        raise InvalidArgument(f"{field} must be a string of 1 to 512 characters, none a control character", field=field)
    return value


async def upload_internal(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize_write(request)
    payload = await read_json(request, limit=_upload_limit(request))
    items = _batch(payload) if "files" in payload else [payload]
    fields = [f"files[{i}]" for i in range(len(items))] if "files" in payload else ["body"]
    uploads = _each_external_id_once([_scraped(item, field) for item, field in zip(items, fields, strict=True)])
    return _json(_listing(await service.ingest(request, rag, uploads)), status=201)


def _scraped(item: Any, field: str) -> rag_files.Upload:
    """A scraper's item: its text is indexed as text, under its filename, else its title, else its external id."""
    if not isinstance(item, dict):
        raise InvalidArgument(f"{field} must be an object", field=field)
    external_id = _external_id(item.get("external_id"), f"{field}.external_id", required=True)
    text = item.get("text")
    if not isinstance(text, str):
        raise InvalidArgument(f"{field}.text must be a string", field=f"{field}.text")
    name, filename = next(((n, item[n]) for n in ("filename", "title") if item.get(n)), ("external_id", external_id))
    if not isinstance(filename, str):
        raise InvalidArgument(f"{field}.{name} must be a string", field=f"{field}.{name}")
    return rag_files.Upload(
        filename=rag_files.validate_filename(filename, f"{field}.{name}"),
        content_type="text/plain",
        data=text.encode(),
        metadata=rag_files.validate_metadata(item.get("metadata"), f"{field}.metadata"),
        external_id=external_id,
        pre_extracted=True,
        item=field,
        field=f"{field}.text",
    )


def _list_conditions(request: web.Request) -> list[MetadataCondition]:
    raw: dict[str, Any] = {}
    for key in set(request.query):
        if key.startswith("metadata."):
            values = request.query.getall(key)
            raw[key] = values if len(values) > 1 else values[0]
    conditions = parse_filters(raw or None, "metadata")
    if "filters" in request.query:
        text = request.query["filters"].encode()
        check_json_bounds(text, field="filters")  # as a body is: an `and` of `and`s is parsed by recursion
        try:
            typed = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise InvalidArgument("filters must be JSON", field="filters") from None
        refuse_nul({"filters": typed})  # as in a JSON body
        conditions += parse_filters(typed)
    return conditions


def _int_param(request: web.Request, name: str, default: int) -> int:
    try:
        return int(request.query.get(name, default))
    except ValueError:
        raise InvalidArgument(f"{name} must be an integer", field=name) from None


async def list_files(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize(request)
    include_total = request.query.get("include_total", "false").lower() in ("1", "true", "yes")
    async with request.app[DB].read() as session:
        page = await rag_files.list_files(
            session,
            rag_id=rag.id,
            conditions=_list_conditions(request),
            status=request.query.get("status") or None,
            after=request.query.get("after") or None,
            limit=_int_param(request, "limit", 20),
            include_total=include_total,
        )
    body = _listing(page.files) | {"has_more": page.next_cursor is not None, "next_cursor": page.next_cursor}
    if page.total is not None:
        body["total"] = page.total
    return _json(body)


async def get_file(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize(request)
    async with request.app[DB].read() as session:
        file = await rag_files.get_file(session, rag_id=rag.id, file_id=request.match_info["file_id"])
    return _json(service.file_json(file))


async def delete_file(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize_write(request)
    index = await service.index_of(request.app)
    async with request.app[DB].transaction() as session:
        file = await rag_files.delete_file(session, index, rag_id=rag.id, file_id=request.match_info["file_id"])
    return _json({"id": file.id, "object": "rag.file.deleted", "deleted": True})


async def update_file(request: web.Request) -> web.StreamResponse:
    rag = await service.authorize_write(request)
    payload = await read_json(request)
    if "metadata" not in payload:
        raise InvalidArgument("metadata is required", field="metadata")
    metadata = rag_files.validate_metadata(payload["metadata"])
    async with request.app[DB].transaction() as session:
        file = await rag_files.update_metadata(
            session, rag_id=rag.id, file_id=request.match_info["file_id"], metadata=metadata
        )
    return _json(service.file_json(file))


def _weights(payload: dict[str, Any], rag_dense: float, rag_lexical: float) -> SearchWeights:
    raw = payload.get("weights")
    if raw is None:
        return SearchWeights(dense=rag_dense, lexical=rag_lexical)
    if not isinstance(raw, dict):
        raise InvalidArgument("weights must be an object with dense and lexical", field="weights")
    dense, lexical = raw.get("dense", rag_dense), raw.get("lexical", rag_lexical)
    if not all(is_number(w) and 0 <= w <= 100 for w in (dense, lexical)):
        raise InvalidArgument("weights.dense and weights.lexical must be numbers from 0 to 100", field="weights")
    if dense + lexical <= 0:
        raise InvalidArgument("weights.dense and weights.lexical cannot both be 0", field="weights")
    return SearchWeights(dense=float(dense), lexical=float(lexical))


def _rerank_flag(payload: dict[str, Any]) -> bool:
    value = payload.get("rerank", True)
    if not isinstance(value, bool):
        raise InvalidArgument("rerank must be true or false", field="rerank")
    return value


async def context(request: web.Request) -> web.StreamResponse:
    started = time.perf_counter()
    status = 200
    rag = None
    try:
        rag = await service.authorize(request)
        payload = await read_json(request)
        query = payload.get("query")
        if not isinstance(query, str) or not query.strip() or len(query) > _MAX_QUERY_CHARS:
            raise InvalidArgument(
                f"query must be a non-empty string of at most {_MAX_QUERY_CHARS} characters", field="query"
            )
        top_k = payload.get("top_k", rag.top_k)
        if not is_integer(top_k) or not 1 <= top_k <= 100:
            raise InvalidArgument("top_k must be an integer from 1 to 100", field="top_k")
        threshold = payload.get("score_threshold", rag.score_threshold)
        if threshold is not None and (not is_number(threshold) or not 0 <= threshold <= 1):
            raise InvalidArgument("score_threshold must be a number from 0 to 1", field="score_threshold")
        hits, files = await service.context(
            request,
            rag,
            query=query,
            top_k=top_k,
            conditions=parse_filters(payload.get("filters")),
            score_threshold=None if threshold is None else float(threshold),
            weights=_weights(payload, rag.dense_weight, rag.lexical_weight),
            rerank=_rerank_flag(payload),
        )
        data = [
            {
                "text": hit.text,
                "score": round(hit.score, 6),
                "file_id": hit.file_id,
                "filename": files[hit.file_id].filename,
                "chunk_id": hit.chunk_id,
                "chunk_index": hit.ordinal,
                "metadata": files[hit.file_id].metadata,
            }
            for hit in hits
        ]
        return _json({"object": "list", "data": data})
    except Exception as exc:
        status = wire_error_for(exc).http_status
        raise
    except BaseException:
        status = 499  # cancelled: the client went away
        raise
    finally:
        service.meter_context(request, rag.id if rag else request.match_info["rag_id"], status, started)


def _deprecated(handler: Handler, successor: str) -> Handler:
    async def wrapped(request: web.Request) -> web.StreamResponse:
        response = await handler(request)
        response.headers["Deprecation"] = "true"
        response.headers["Link"] = f'<{successor}>; rel="successor-version"'
        return response

    return wrapped


def routes(app: web.Application) -> None:
    app.cleanup_ctx.append(service.background_tasks)
    app.cleanup_ctx.append(mcp_lifespan)
    base = "/rag/{rag_id}"
    router = app.router
    router.add_post(f"{base}/files/content", upload_content)
    router.add_post(f"{base}/files", upload_files)
    router.add_get(f"{base}/files", list_files)
    router.add_get(f"{base}/files/{{file_id}}", get_file)
    router.add_delete(f"{base}/files/{{file_id}}", delete_file)
    router.add_patch(f"{base}/files/{{file_id}}", update_file)
    router.add_post(f"{base}/internal/files", upload_internal)
    router.add_post(f"{base}/context", context)
    router.add_route("*", f"{base}/mcp", mcp_endpoint)
    router.add_post(f"{base}/content", _deprecated(upload_content, "files/content"))
    router.add_get(f"{base}/content", _deprecated(list_files, "files"))
    router.add_get(f"{base}/content/{{file_id}}", _deprecated(get_file, "files/{file_id}"))
    router.add_delete(f"{base}/content/{{file_id}}", _deprecated(delete_file, "files/{file_id}"))
    router.add_patch(f"{base}/content/{{file_id}}", _deprecated(update_file, "files/{file_id}"))
