"""RAG files: ingest (parse → chunk → embed → store), list, get, delete, metadata updates.

Rules
- Parsing and chunking happen before anything is stored, so a refused upload (empty content, corrupt, wrong type,
  too large) leaves nothing behind. The file row is then written as `processing`; its chunks are stored in the same
  transaction that marks it `ready`, and an embedding failure marks it `failed` with a reason (chunks never stored).
- A file with an `external_id` (the scraper path) replaces the RAG's earlier file with that id in the transaction
  that stores its chunks (`complete`): until then the earlier file stays, and the new one holds no external id (the id
  is unique per RAG), so a replacement whose embedding fails loses nothing.
- Quota: a file is charged what it stores, the UTF-8 bytes of its chunks' text (overlaps included: each chunk is
  stored whole), not its upload size: a compressed upload (DOCX, PDF) can unpack to far more text than it weighs.
  That is the file's `size_bytes`. The bytes of every file of an upload are reserved (server.domain.rag_storage)
  first in the transaction that records them, so an upload over the RAG's or the tenant's quota is refused before
  anything is stored, under concurrent uploads too. A replaced, deleted or failed file gives its bytes back, once: only
  the delete that removed the row releases them (a failed file then reports 0 bytes and 0 chunks, having stored none).
  A replacement reserves its new bytes before the old ones are released, so near the quota it is refused.
- The vector size is pinned by the RAG's first embedding (server.domain.rags.pin_embedding_dimensions); a different
  size later fails the file with that reason.
- Metadata: a JSON object of at most 64 keys; values are strings, numbers, booleans or lists of those
  (`source_group_ids` is the usual list). Filters (server.domain.rag_filters) match it the same way everywhere.
- Listing orders by creation (oldest first) with an opaque cursor (the last file's creation time and id), each page
  read from the index on (rag_id, created_at, id), so a deep page costs what the first does. Metadata filters are
  matched in process, exactly as everywhere else: a filtered page reads rows a batch at a time until it is full, and
  a search's filter reads only the files' ids and metadata (and a gateway holds them between searches:
  server.domain.rag_ready_files). `include_total` counts the files that match exactly
  (without filters, a count in the database).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Row, Select, Text, bindparam, cast, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import rag_storage, rags
from server.domain.rag_chunking import Chunk, chunk_parsed, e5_token_counter
from server.domain.rag_filters import MetadataCondition, matcher, texts_needed
from server.domain.rag_parsing import NamedFile, parse_file
from server.domain.validation import is_utf8, validate_header_text
from server.errors import InvalidArgument, NotFound
from server.store.db import as_utc, new_id
from server.store.keyset import Window
from server.store.models import RagFileRow, utcnow
from server.store.rag_index import ChunkIndex, ChunkInput
from server.store.rag_index.base import bump_generation

__all__ = [
    "Embedder",
    "FilePage",
    "PreparedFile",
    "RagFile",
    "Upload",
    "complete",
    "decoded_metadata",
    "delete_file",
    "get_file",
    "has_control_characters",
    "list_files",
    "matching_file_ids",
    "metadata_texts",
    "parse_and_chunk",
    "register",
    "register_all",
    "update_metadata",
    "validate_content_type",
    "validate_filename",
    "validate_metadata",
]

Embedder = Callable[[Sequence[str]], Awaitable[list[list[float]]]]
PROCESSING, READY, FAILED = "processing", "ready", "failed"
_MAX_METADATA_KEYS = 64
_MAX_METADATA_BYTES = 16 * 1024
_MAX_LIST = 100
_SCAN = 500  # rows a filtered listing reads at a time (its conditions are matched in process, on the JSON metadata)
_MAX_FILENAME = 512
_MAX_CONTENT_TYPE = 128  # its column's length (PostgreSQL refused a longer one: a 500)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Upload:
    filename: str
    content_type: str | None
    data: bytes
    metadata: dict[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    # Text a scraper extracted itself: indexed as plain text.
    pre_extracted: bool = False
    # Where the request holds the upload (a multipart `file` part, `files[2]` of a JSON batch, a scraper's `body`),
    # and where it holds the file's content (the same, but a scraper's `body.text`): what refusals of it name.
    item: str = "file"
    field: str = "file"

    @property
    def named(self) -> NamedFile:
        """The file as a refusal of its content names it."""
        return NamedFile(self.filename, self.field)


@dataclass(frozen=True)
class PreparedFile:
    """An upload parsed and chunked: what registering and storing it need, without the upload's bytes (a sandbox
    worker would copy them back, and nothing after parsing reads them)."""

    filename: str
    content_type: str | None
    metadata: dict[str, Any]
    external_id: str | None
    kind: str
    chunks: list[Chunk]

    @property
    def stored_bytes(self) -> int:
        """What the quota charges: the bytes of text its chunks store."""
        return sum(len(chunk.text.encode()) for chunk in self.chunks)


@dataclass(frozen=True)
class RagFile:
    id: str
    rag_id: str
    filename: str
    content_type: str
    kind: str
    size_bytes: int
    status: str
    failure_reason: str | None
    external_id: str | None
    metadata: dict[str, Any]
    chunk_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class FilePage:
    files: list[RagFile]
    next_cursor: str | None
    total: int | None


def _build(row: RagFileRow | Row[Any]) -> RagFile:
    return RagFile(
        id=row.id,
        rag_id=row.rag_id,
        filename=row.filename,
        content_type=row.content_type,
        kind=row.kind,
        size_bytes=row.size_bytes,
        status=row.status,
        failure_reason=row.failure_reason,
        external_id=row.external_id,
        metadata=dict(row.metadata_ or {}),
        chunk_count=row.chunk_count,
        created_at=as_utc(row.created_at) or row.created_at,
        updated_at=as_utc(row.updated_at) or row.updated_at,
    )


def validate_metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument(f"{field} must be a JSON object", field=field)
    if len(value) > _MAX_METADATA_KEYS:
        raise InvalidArgument(f"{field} has more than {_MAX_METADATA_KEYS} keys", field=field)
    for key, item in value.items():
        if not key or len(key) > 128:
            raise InvalidArgument(f"{field} keys must be 1 to 128 characters", field=field)
        values = item if isinstance(item, list) else [item]
        if not all(isinstance(v, str | int | float | bool) for v in values):
            raise InvalidArgument(
                f"{field}.{key} must be a string, number, boolean or a list of those", field=f"{field}.{key}"
            )
    if len(orjson.dumps(value)) > _MAX_METADATA_BYTES:
        raise InvalidArgument(f"{field} is larger than {_MAX_METADATA_BYTES} bytes", field=field)
    return dict(value)


def has_control_characters(text: str) -> bool:
    return _CONTROL.search(text) is not None


def validate_filename(name: str, field: str = "file") -> str:
    """A file name fits its column, is UTF-8 text and holds no control character (PostgreSQL refuses NUL in text:
    a 500)."""
    if len(name) > _MAX_FILENAME:
        raise InvalidArgument(f"a file name is longer than {_MAX_FILENAME} characters", field=field)
    if not is_utf8(name):
        raise InvalidArgument("a file name is not UTF-8 text", field=field)
    if has_control_characters(name):
        raise InvalidArgument("a file name contains a control character (such as NUL or a line break)", field=field)
    return name


def validate_content_type(content_type: str | None, filename: str, field: str) -> None:
    """A file's declared content type, as it is stored."""
    validate_header_text(content_type, what=f"{filename}: its content type", field=field, max_length=_MAX_CONTENT_TYPE)


def parse_and_chunk(upload: Upload, *, size_tokens: int, overlap_tokens: int, max_bytes: int) -> PreparedFile:
    """Parse and chunk; every refusal names the file. CPU work on untrusted input whose cost can grow faster than its
    size: the gateway runs it in its sandbox (server.sandbox), which calls it in a worker process."""
    validate_filename(upload.filename, upload.field)
    validate_content_type(upload.content_type, upload.filename, upload.field)
    if upload.pre_extracted:  # text, whatever its name ends in: a scraper's `reports/2024.pdf`
        parsed = parse_file(
            upload.filename or "text.txt", None, upload.data, max_bytes=max_bytes, kind="text", field=upload.field
        )
    else:
        parsed = parse_file(upload.filename, upload.content_type, upload.data, max_bytes=max_bytes, field=upload.field)
    chunks = chunk_parsed(
        parsed, size_tokens=size_tokens, overlap_tokens=overlap_tokens, count_tokens=e5_token_counter()
    )
    if not chunks:
        raise upload.named.invalid("the file parses to empty content")
    return PreparedFile(
        filename=upload.filename,
        content_type=upload.content_type,
        metadata=upload.metadata,
        external_id=upload.external_id,
        kind=parsed.kind,
        chunks=chunks,
    )


async def register_all(
    session: AsyncSession, index: ChunkIndex, rag_id: str, prepared: Sequence[PreparedFile]
) -> list[RagFile]:
    """Reserve the quota for all of them, then write each file row as `processing`."""
    await rag_storage.reserve_storage(session, rag_id=rag_id, nbytes=sum(p.stored_bytes for p in prepared))
    return [await register(session, index, rag_id, p) for p in prepared]


async def register(session: AsyncSession, index: ChunkIndex, rag_id: str, prepared: PreparedFile) -> RagFile:
    """Write the file row as `processing` (its bytes already reserved: see register_all). Its external id, if any,
    is not written yet: `complete` takes it over from the earlier file once this one's chunks are stored."""
    row = RagFileRow(
        id=new_id("file"),
        rag_id=rag_id,
        filename=prepared.filename,
        content_type=prepared.content_type or "",
        kind=prepared.kind,
        size_bytes=prepared.stored_bytes,
        status=PROCESSING,
        metadata_=prepared.metadata,
        chunk_count=len(prepared.chunks),
    )
    session.add(row)
    await session.flush()
    return _build(row)


async def complete(
    session: AsyncSession,
    index: ChunkIndex,
    *,
    rag_id: str,
    file_id: str,
    chunks: Sequence[Chunk],
    vectors: Sequence[Sequence[float]],
    external_id: str | None = None,
) -> RagFile | None:
    """Store the chunks with their vectors and mark the file ready (one transaction: the caller's); with an
    `external_id`, the RAG's earlier file with that id is deleted in the same transaction and this one takes the id.
    The file as it is then, or None when it was deleted meanwhile."""
    if len(vectors) != len(chunks) or not vectors:
        raise ValueError("one vector per chunk")
    await rags.pin_embedding_dimensions(session, rag_id=rag_id, dimensions=len(vectors[0]))
    row = await session.get(RagFileRow, file_id, with_for_update=True)
    if row is None or row.status != PROCESSING:
        return None  # deleted or replaced while it was being embedded
    inputs = [
        ChunkInput(text=c.text, token_count=c.token_count, vector=v) for c, v in zip(chunks, vectors, strict=True)
    ]
    await index.add(session, rag_id=rag_id, file_id=file_id, chunks=inputs)
    if external_id:
        earlier = await session.scalar(
            select(RagFileRow.id).where(RagFileRow.rag_id == rag_id, RagFileRow.external_id == external_id)
        )
        if earlier is not None:
            await _delete(session, index, rag_id, earlier)
        row.external_id = external_id
    row.status = READY
    row.updated_at = utcnow()
    return _build(row)


async def fail(session: AsyncSession, *, file_id: str, reason: str) -> None:
    """Mark a file failed; it keeps no content, so its bytes go back to the quota and it counts no chunks."""
    row = await session.get(RagFileRow, file_id)
    if row is not None and row.status == PROCESSING:
        await rag_storage.release_storage(session, rag_id=row.rag_id, nbytes=row.size_bytes)
        row.status = FAILED
        row.failure_reason = reason
        row.size_bytes = 0
        row.chunk_count = 0
        row.updated_at = utcnow()


async def get_file(session: AsyncSession, *, rag_id: str, file_id: str) -> RagFile:
    row = await session.get(RagFileRow, file_id)
    if row is None or row.rag_id != rag_id:
        raise _not_found(file_id)
    return _build(row)


def _not_found(file_id: str) -> NotFound:
    return NotFound(f"file {file_id!r} not found in this RAG", field="file_id")


async def get_files(session: AsyncSession, *, rag_id: str, file_ids: Collection[str]) -> dict[str, RagFile]:
    """The RAG's files among `file_ids`, in one query (ids of other RAGs or deleted files are left out)."""
    if not file_ids:
        return {}
    rows = await session.execute(_FILES_OF_RAG, {"rag_id": rag_id, "ids": list(file_ids)})
    return {row.id: _build(row) for row in rows}


# Every RAG search reads its hits' files: built once, on the table, its columns named as RagFileRow's attributes so
# that `_build` reads the rows alike (server.store.rag_index.search's _CHUNK_ROWS says why).
_FILES_TABLE = RagFileRow.__table__
_FILES = _FILES_TABLE.c
_FILE_COLUMNS = select(*(column.label(RagFileRow.__mapper__.get_property_by_column(column).key) for column in _FILES))
_METADATA_TEXT = cast(_FILES["metadata"], Text)  # the JSON as written
_METADATA_ROWS = select(_FILES.id, _METADATA_TEXT)
_FILES_OF_RAG = _FILE_COLUMNS.where(
    _FILES.rag_id == bindparam("rag_id"), _FILES.id.in_(bindparam("ids", expanding=True))
)


async def _delete(session: AsyncSession, index: ChunkIndex, rag_id: str, file_id: str) -> bool:
    """Delete the file's chunks and row and give its bytes back; False (nothing released) when the row was already
    gone. Concurrent deletes of one file may all have read it: only the one whose statement removed the row releases
    its size, which is read from that statement, so the quota is credited once."""
    # The chunks first: SQLite's FTS5 forgets a chunk only when told its text, which the row's cascade would remove.
    await index.remove_file(session, rag_id=rag_id, file_id=file_id)
    size = await session.scalar(
        delete(RagFileRow)
        .where(RagFileRow.id == file_id, RagFileRow.rag_id == rag_id)
        .returning(RagFileRow.size_bytes)
        .execution_options(synchronize_session=False)
    )
    if size is None:
        return False
    await rag_storage.release_storage(session, rag_id=rag_id, nbytes=int(size))
    return True


async def delete_file(session: AsyncSession, index: ChunkIndex, *, rag_id: str, file_id: str) -> RagFile:
    """Delete a file and its chunks; returns what was deleted (its size is what the quota frees). NotFound also when
    a concurrent delete removed it first."""
    deleted = await get_file(session, rag_id=rag_id, file_id=file_id)
    if not await _delete(session, index, rag_id, file_id):
        raise _not_found(file_id)
    return deleted


async def update_metadata(session: AsyncSession, *, rag_id: str, file_id: str, metadata: dict[str, Any]) -> RagFile:
    row = await session.get(RagFileRow, file_id)
    if row is None or row.rag_id != rag_id:
        raise _not_found(file_id)
    row.metadata_ = metadata
    row.updated_at = utcnow()
    await session.flush()
    await bump_generation(session, rag_id)  # what a filtered search reads has changed (rag_ready_files)
    return _build(row)


def _encode_cursor(item: RagFile) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([item.created_at.isoformat(), item.id])).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        created, file_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
        at = datetime.fromisoformat(created)
        if not isinstance(file_id, str) or "\x00" in file_id:  # not one of ours; PostgreSQL's driver refused it
            raise ValueError(file_id)
        return as_utc(at) or at, file_id
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise InvalidArgument("after is not a cursor this API returned", field="after") from None


def _of_rag(
    query: Select[Any], rag_id: str, status: str | None, conditions: Sequence[MetadataCondition] = ()
) -> Select[Any]:
    """`query` narrowed to the RAG's files of that status, and to those whose metadata text holds what the conditions
    need (`texts_needed`: the JSON as written, searched before any row is decoded; `matcher` decides after)."""
    query = query.where(_FILES.rag_id == rag_id)
    if status is not None:
        query = query.where(_FILES.status == status)
    for texts in texts_needed(conditions):
        query = query.where(or_(*(_METADATA_TEXT.contains(t, autoescape=True) for t in sorted(texts))))
    return query


async def matching_file_ids(
    session: AsyncSession, *, rag_id: str, conditions: Sequence[MetadataCondition], status: str | None = None
) -> list[str]:
    """The ids of the RAG's files (of that status) whose metadata meet every condition: their ids and metadata read,
    nothing else (a search restricted to them reads its hits' files afterwards), and of an eq or in condition on
    strings only the rows whose metadata text holds one of them."""
    match = matcher(conditions)
    rows = await metadata_texts(session, rag_id, conditions, status)
    return [file_id for file_id, text in rows if match(decoded_metadata(text))]


async def metadata_texts(
    session: AsyncSession, rag_id: str, conditions: Sequence[MetadataCondition] = (), status: str | None = None
) -> list[tuple[str, str | None]]:
    """The ids and metadata (JSON text: `decoded_metadata`) of the RAG's files of that status, of those the conditions
    could match (`_of_rag`)."""
    return [
        (file_id, text) for file_id, text in await session.execute(_of_rag(_METADATA_ROWS, rag_id, status, conditions))
    ]


def decoded_metadata(text: str | None) -> dict[str, Any]:
    # Decoded with orjson rather than by the column's type (Python's json; psycopg's): at 20,000 files 58 -> 38 ms on
    # SQLite, 68 -> 35 on PostgreSQL for a filter every file meets.
    return orjson.loads(text or "{}") or {}


async def list_files(
    session: AsyncSession,
    *,
    rag_id: str,
    conditions: list[MetadataCondition],
    status: str | None = None,
    after: str | None = None,
    limit: int = 20,
    include_total: bool = False,
) -> FilePage:
    """A page of the RAG's files, oldest first, from the index on (rag_id, created_at, id): without conditions,
    `limit` + 1 rows; with them, `_SCAN` rows at a time until the page is full (or the files run out)."""
    if not 1 <= limit <= _MAX_LIST:
        raise InvalidArgument(f"limit must be between 1 and {_MAX_LIST}", field="limit")
    if status is not None and status not in (PROCESSING, READY, FAILED):
        raise InvalidArgument("status must be processing, ready or failed", field="status")
    listed = _of_rag(_FILE_COLUMNS, rag_id, status, conditions).order_by(_FILES.created_at, _FILES.id)
    window = Window(_decode_cursor(after) if after else None, max(limit + 1, _SCAN) if conditions else limit + 1)
    found: list[RagFile] = []
    match = matcher(conditions)
    while len(found) <= limit:
        rows = (await session.execute(window.apply(listed, _FILES.created_at, _FILES.id))).all()
        found += [_build(row) for row in rows if match(row.metadata_ or {})]
        if len(rows) < window.limit:
            break
        window = Window((rows[-1].created_at, rows[-1].id), window.limit)
    page = found[:limit]
    next_cursor = _encode_cursor(page[-1]) if len(found) > limit else None
    return FilePage(
        files=page,
        next_cursor=next_cursor,
        total=await _total(session, rag_id, conditions, status) if include_total else None,
    )


async def _total(session: AsyncSession, rag_id: str, conditions: list[MetadataCondition], status: str | None) -> int:
    if not conditions:
        return int(await session.scalar(_of_rag(select(func.count()).select_from(_FILES_TABLE), rag_id, status)) or 0)
    return len(await matching_file_ids(session, rag_id=rag_id, conditions=conditions, status=status))
