"""What the RAG surfaces do, between HTTP (routes.py) and the domain (server.domain.rag_files): authorise the
key on the RAG, ingest inline or in the background, search.

Access: every {rag_url} surface needs `can_invoke` on the RAG (reading and invoking are one right; API keys never
administer, so a key that may use a RAG may also fill it — its settings and sharing stay with RagService). A RAG the
key cannot reach answers 404 whether or not it exists.

Background work: uploads whose text is over `rag_inline_bytes` are embedded by an in-process task after the upload
returned (status `processing`). The queue lives in this process only: a gateway stopped mid-way leaves such a file in
`processing` for good (it says so in its failure reason if the task was cancelled in an orderly shutdown); upload it
again. Small files complete within the request, and if their embedding fails nothing of them is kept (a file with an
`external_id` replaces the earlier one only when its chunks are stored: server.domain.rag_files). The embedding
calls count under the uploading key's rate limits (gateway.rag.embedder): a refused inline upload answers the
limit's 429; a background one waits for a per-minute limit's room, and fails its file only on a spent budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine, Sequence
from typing import Any, TypeVar

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from gateway import metrics
from gateway.client_gone import while_connected
from gateway.context import ACCESS, DB, METER, PRINCIPAL, SETTINGS
from gateway.rag.embedder import BATCHERS, GatewayEmbedder, new_batchers
from gateway.rag.writes import CombinedWrites
from server.domain import rag_files, rags
from server.domain.rag_chunking import e5_token_counter
from server.domain.rag_filters import MetadataCondition
from server.domain.rag_parsing import out_of_memory
from server.domain.rag_ready_files import ReadyFiles
from server.errors import NotFound, SwitchboardError
from server.metering import CallKind, UsageEvent
from server.permissions import ResourceKind
from server.sandbox import CpuBudget, OverBudget, Sandbox, WorkerDied
from server.store.rag_index import (
    Candidate,
    ChunkHit,
    ChunkIndex,
    SearchWeights,
    chunk_index_for,
    lexical_list,
    search,
)

__all__ = ["TASKS", "authorize", "background_tasks", "context", "index_of", "ingest", "meter_context"]

log = logging.getLogger("switchboard.gateway.rag")
T = TypeVar("T")
U = TypeVar("U")


class _Tasks:
    def __init__(self) -> None:
        self.running: set[asyncio.Task[None]] = set()


TASKS = web.AppKey("rag_tasks", _Tasks)
WRITES = web.AppKey("rag_writes", CombinedWrites)  # every upload's registration and chunks (gateway.rag.writes)
READY_FILES = web.AppKey("rag_ready_files", ReadyFiles)  # what filtered searches match (server.domain.rag_ready_files)
PARSERS = web.AppKey("rag_parsers", Sandbox)  # uploads are parsed and chunked in its worker processes
_CPU_SECONDS_PER_MIB = 2
_INTERRUPTED = "processing was interrupted by a gateway shutdown; upload the file again"


async def background_tasks(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: the in-process queue; on shutdown running tasks are cancelled and their files marked failed."""
    app[TASKS] = _Tasks()
    app[BATCHERS] = new_batchers()
    app[WRITES] = CombinedWrites(app[DB])
    app[READY_FILES] = ReadyFiles()
    settings = app[SETTINGS]
    app[PARSERS] = Sandbox(
        workers=settings.rag_parse_workers,
        memory_bytes=settings.rag_parse_memory_bytes,
        preload=["server.domain.rag_files", "pypdf", "selectolax.lexbor", "docx"],
        warm=e5_token_counter,
    )
    yield
    tasks = list(app[TASKS].running)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await app[PARSERS].close()


async def index_of(app: web.Application) -> ChunkIndex:
    return await chunk_index_for(app[DB].engine)


async def authorize(request: web.Request, rag_id: str | None = None, *, delegated: bool = False) -> rags.Rag:
    """The RAG (by default the one in the URL) if the caller may invoke it, from the gateway's access cache
    (gateway.access: as fresh as model decisions); `delegated` skips the caller's check for a RAG used on a preset
    agent's authority (see gateway.responses.rag_tools)."""
    rag_id = rag_id or request.match_info["rag_id"]
    return await request.app[ACCESS].rag(None if delegated else request[PRINCIPAL], rag_id)


async def authorize_write(request: web.Request) -> rags.Rag:
    """The RAG in the URL if the caller may write its files: use it, and for a platform RAG be named its writer."""
    rag = await authorize(request)
    await request.app[ACCESS].require_rag_writer(request[PRINCIPAL], rag)
    return rag


async def ingest(request: web.Request, rag: rags.Rag, uploads: Sequence[rag_files.Upload]) -> list[rag_files.RagFile]:
    """Parse and chunk every upload first (any refusal stores nothing), then register them all in one
    transaction (shared with concurrent uploads': gateway.rag.writes), then embed: inline when small, else in the
    background. A client that hangs up stops all of it (its parse's worker is killed, its writes not kept)."""
    return await while_connected(request, _ingest(request, rag, uploads))


async def _ingest(request: web.Request, rag: rags.Rag, uploads: Sequence[rag_files.Upload]) -> list[rag_files.RagFile]:
    app = request.app
    settings = app[SETTINGS]
    # Before parsing, for every upload: one embedded in the background would otherwise be accepted (`processing`)
    # and fail afterwards, while a small one is refused, and the parse would be spent for nothing.
    await GatewayEmbedder(app, rag, request[PRINCIPAL]).require_embedding_model()
    # One CPU budget for all the files, by their total size: a hundred small hostile files are given no more
    # than one file of their size.
    size = sum(len(upload.data) for upload in uploads)
    budget = CpuBudget(settings.rag_parse_cpu_seconds + math.ceil(_CPU_SECONDS_PER_MIB * size / 2**20))
    prepared = [await _prepare(app, rag, upload, budget) for upload in uploads]
    index = await index_of(app)
    files = await app[WRITES].run(
        lambda session: rag_files.register_all(session, index, rag.id, prepared),
        undo=lambda registered: _forget(app, index, rag.id, [f.id for f in registered]),  # a client gone meanwhile
    )
    pending = [(file.id, ready) for file, ready in zip(files, prepared, strict=True)]
    if sum(p.stored_bytes for p in prepared) <= settings.rag_inline_bytes:  # the text to embed, not the upload
        job = _Job(app, index, GatewayEmbedder(app, rag, request[PRINCIPAL]), rag.id, pending)
        try:  # its chunks share embedding calls and a transaction with concurrent uploads'
            done = await job.run()
        except BaseException:
            metrics.rag_ingested("inline", len(files), 0, ok=False)
            await _forget(app, index, rag.id, [f.id for f in files])
            raise
        metrics.rag_ingested("inline", len(files), job.chunks, ok=True)
        return [file for file in done if file is not None]  # a file deleted meanwhile is gone
    metrics.rag_backlog(len(pending))
    embedder = GatewayEmbedder(app, rag, request[PRINCIPAL], background=True)
    for one in pending:  # each file on its own, so that one failure fails only its file
        task = asyncio.create_task(_Job(app, index, embedder, rag.id, [one]).run_in_background())
        app[TASKS].running.add(task)
        task.add_done_callback(app[TASKS].running.discard)
    return files


async def _prepare(
    app: web.Application, rag: rags.Rag, upload: rag_files.Upload, budget: CpuBudget
) -> rag_files.PreparedFile:
    """Parse and chunk in the sandbox, within what the upload's budget has left: CPU time for a slow parse of its
    files' size (pypdf reads ~2 M characters a second, chunking 8-12 MiB of text) on top of the base allowance.
    Refusals name the file where the request holds it (`upload.field`), as the parsers' own do."""
    settings = app[SETTINGS]
    try:
        return await app[PARSERS].run(
            rag_files.parse_and_chunk,
            upload,
            size_tokens=rag.chunk_size_tokens,
            overlap_tokens=rag.chunk_overlap_tokens,
            max_bytes=settings.rag_max_file_bytes,
            budget=budget,
        )
    except OverBudget:
        raise upload.named.invalid(
            f"parsing the upload takes more than the {budget.seconds} s of CPU time files of its size are given"
        ) from None
    except WorkerDied:
        raise upload.named.invalid("the file's parser failed on it") from None
    except MemoryError:
        raise out_of_memory(upload.named) from None


@dataclasses.dataclass(frozen=True)
class _Job:
    """Embedding and storing registered files' chunks: within the request, or as a background task."""

    app: web.Application
    index: ChunkIndex
    embedder: GatewayEmbedder
    rag_id: str
    files: list[tuple[str, rag_files.PreparedFile]]  # (file id, what was registered under it)

    @property
    def chunks(self) -> int:
        return sum(len(prepared.chunks) for _, prepared in self.files)

    async def run(self) -> list[rag_files.RagFile | None]:
        """The files as stored (None for one deleted meanwhile)."""
        vectors = await self.embedder.passages([c.text for _, prepared in self.files for c in prepared.chunks])
        return await self.app[WRITES].run(functools.partial(self._store, vectors=vectors))

    async def _store(self, session: AsyncSession, *, vectors: list[list[float]]) -> list[rag_files.RagFile | None]:
        stored, start = [], 0
        for file_id, prepared in self.files:
            chunks = prepared.chunks
            mine = vectors[start : start + len(chunks)]
            start += len(chunks)
            stored.append(
                await rag_files.complete(
                    session,
                    self.index,
                    rag_id=self.rag_id,
                    file_id=file_id,
                    chunks=chunks,
                    vectors=mine,
                    external_id=prepared.external_id,  # replaces the earlier file only now (rag_files)
                )
            )
        return stored

    async def run_in_background(self) -> None:
        """`run`, with the files marked failed (and why) instead of an error to raise."""
        ok = False
        try:
            await self.run()
            ok = True
        except asyncio.CancelledError:
            await self._fail(_INTERRUPTED)
            raise
        except SwitchboardError as exc:
            await self._fail(exc.message)
        except Exception:
            log.exception("processing a RAG file failed")
            await self._fail("internal error while processing the file")
        finally:
            metrics.rag_backlog(-len(self.files))
            metrics.rag_ingested("background", len(self.files), self.chunks if ok else 0, ok=ok)

    async def _fail(self, reason: str) -> None:
        for file_id, _ in self.files:
            await _fail(self.app, file_id, reason)


async def _fail(app: web.Application, file_id: str, reason: str) -> None:
    async with app[DB].transaction() as session:
        await rag_files.fail(session, file_id=file_id, reason=reason)


async def _forget(app: web.Application, index: ChunkIndex, rag_id: str, file_ids: list[str]) -> None:
    async with app[DB].transaction() as session:
        for file_id in file_ids:
            try:
                await rag_files.delete_file(session, index, rag_id=rag_id, file_id=file_id)
            except NotFound:
                continue


async def context(
    request: web.Request,
    rag: rags.Rag,
    *,
    query: str,
    top_k: int,
    conditions: list[MetadataCondition],
    score_threshold: float | None,
    weights: SearchWeights,
    rerank: bool = True,
) -> tuple[list[ChunkHit], dict[str, rag_files.RagFile]]:
    """Hybrid search; with a rerank model (and `rerank`), the best max(3·top_k, 20) fused candidates are reordered by
    the reranker and each hit's `score` becomes its relevance score (the threshold applies to the fused score)."""
    app = request.app
    index = await index_of(app)
    files: dict[str, rag_files.RagFile] = {}
    models = GatewayEmbedder(app, rag, request[PRINCIPAL])
    reranking = rerank and rag.rerank_model is not None
    wanted = max(top_k * 3, 20) if reranking else top_k
    # The filter's files and the lexical list need no vector: read while the query is embedded, their time (a
    # millisecond to tens of them on a RAG of many files) hides behind the upstream call.
    both = weights.lexical > 0 and weights.dense > 0
    reads = _reads(
        app,
        index,
        rag_id=rag.id,
        query=query,
        conditions=conditions,
        lexical_top_k=wanted if both else 0,
        weights=weights,
    )
    vector = None
    if weights.dense > 0:
        vector, (file_ids, lexical) = await _beside(models.query(query), reads)
    else:
        file_ids, lexical = await reads
    async with app[DB].read() as session:
        hits = await search(
            index,
            session,
            rag_id=rag.id,
            query=query,
            vector=vector,
            top_k=wanted,
            file_ids=file_ids,
            weights=weights,
            score_threshold=score_threshold,
            lexical=lexical,
        )
        if not reranking:
            files = await _files_of(session, rag.id, hits)
    if reranking and hits:  # outside the session: no pooled connection is held across the upstream call
        relevance = await models.rerank(query, [h.text for h in hits])
        ranked = sorted(zip(relevance, hits, strict=True), key=lambda pair: -pair[0])[:top_k]
        hits = [dataclasses.replace(hit, score=score) for score, hit in ranked]
        async with app[DB].read() as session:
            files = await _files_of(session, rag.id, hits)
    # A file deleted since the search is gone with its chunks.
    return [h for h in hits if h.file_id in files], files


async def _reads(
    app: web.Application,
    index: ChunkIndex,
    *,
    rag_id: str,
    query: str,
    conditions: list[MetadataCondition],
    lexical_top_k: int,
    weights: SearchWeights,
) -> tuple[list[str] | None, list[Candidate] | None]:
    """What a search reads before it needs the query's vector, in a read session of its own (so no pooled
    connection waits on the embedding upstream): the ready files the conditions restrict it to (None: no
    restriction), then, when `lexical_top_k`, the lexical list among them."""
    if not conditions and not lexical_top_k:  # nothing to read: no session (a dense-only or lexical-only search)
        return None, None
    async with app[DB].read() as session:
        file_ids = await app[READY_FILES].matching(session, rag_id, conditions) if conditions else None
        if not lexical_top_k:
            return file_ids, None
        lexical = await lexical_list(
            index, session, rag_id=rag_id, query=query, top_k=lexical_top_k, file_ids=file_ids, weights=weights
        )
        return file_ids, lexical


async def _beside(main: Awaitable[T], side: Coroutine[Any, Any, U]) -> tuple[T, U]:
    """`main`'s and `side`'s results, `side` running as a task meanwhile. If `main` fails, `side` still runs to its
    end, its outcome dropped: it is a short database read, and one cancelled mid-statement can cost its pooled
    connection. If `side` fails, that is raised once `main` is done."""
    task = asyncio.create_task(side)
    try:
        result = await main
    except BaseException:
        with contextlib.suppress(Exception):
            await task
        raise
    return result, await task


async def _files_of(session: AsyncSession, rag_id: str, hits: list[ChunkHit]) -> dict[str, rag_files.RagFile]:
    return await rag_files.get_files(session, rag_id=rag_id, file_ids={h.file_id for h in hits})


def file_json(file: rag_files.RagFile) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": file.id,
        "object": "rag.file",
        "filename": file.filename,
        "content_type": file.content_type,
        "kind": file.kind,
        "bytes": file.size_bytes,
        "status": file.status,
        "failure_reason": file.failure_reason,
        "external_id": file.external_id,
        "metadata": file.metadata,
        "chunk_count": file.chunk_count,
        "created_at": int(file.created_at.timestamp()),
        "updated_at": int(file.updated_at.timestamp()),
    }
    return body


def meter_context(request: web.Request, rag_id: str, status: int, started: float) -> None:
    """Each /context call is one CALL_KIND_RAG_CONTEXT usage event of the caller, targeting the RAG."""
    principal = request[PRINCIPAL]
    key = principal.api_key
    request.app[METER].usage(
        UsageEvent(
            tenant_id=key.tenant_id if key else (principal.scoped_tenant_id or ""),
            api_key_id=key.key_id if key else "",
            user_id=principal.user_id or "",
            model_id="",
            call_kind=int(CallKind.RAG_CONTEXT),
            target_kind=int(ResourceKind.RAG),
            target_name=rag_id,
            status=status,
            latency_ms=(time.perf_counter() - started) * 1000,
            request_bytes=request.content_length or 0,
        )
    )
