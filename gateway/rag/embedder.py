"""RAG model calls go through the gateway (the spec's only route for RAG model calls): the RAG's pinned embedding
model (and its rerank model, when it has one) is resolved, translated and sent exactly like a /v1/embeddings or
/v1/rerank call, and each upstream call is metered as an embedding or rerank call of the RAG's owner (its tenant; ""
for platform-owned RAGs) by the key that caused it.

Each is also admitted under the rate limits and budgets of the key that caused it (gateway.limits), as a request of
that model reserving its input, without a concurrency slot (the upload or search holds the caller's connection, not
a model's): otherwise uploading files would spend a tenant's embedding model without limit. A refused call fails
what needed it (an upload answers the limit's 429 and keeps nothing; a search, the same 429), except in a background
ingest, which has already answered: it waits for the room a per-minute limit names and goes on, and fails its file
only when waiting cannot help (a budget spent).

Passages are sent as they are; queries get the deployment's query prefix, as /v1/embeddings does for
`input_type: "query"`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
from aiohttp import web

from gateway.catalog import Route, TaskType
from gateway.context import ACCESS, HTTP, LIMITER, METER, TRANSLATORS
from gateway.limits import Grant, Limiter, LimitExceeded
from gateway.limits.estimate import input_tokens
from gateway.providers import Surface, open_upstream, read_answer
from gateway.rag.batcher import Batchers
from gateway.surfaces._upstream import require_task
from gateway.surfaces.embeddings import with_prefix
from server.domain.json_values import count_or_zero
from server.domain.principal import Principal
from server.domain.rags import Rag
from server.errors import UpstreamFailed
from server.metering import CallKind, UsageEvent

__all__ = ["BATCHERS", "GatewayEmbedder", "new_batchers", "post_metered"]

T = TypeVar("T")
log = logging.getLogger("switchboard.gateway")

_BATCH = 32
# Batches of one text list (or of one RAG's and caller's uploads together) in flight at once: a large file's chunks
# embed in about a quarter of the time a remote model takes one batch after another, without one upload taking all
# of a provider's capacity.
_IN_FLIGHT = 4
_BATCH_WAIT = 0.02  # seconds a passage may wait for others to fill its batch while another batch is out
BATCHERS = web.AppKey("rag_batchers", Batchers)


def new_batchers() -> Batchers:
    return Batchers(size=_BATCH, wait=_BATCH_WAIT, in_flight=_IN_FLIGHT)


class GatewayEmbedder:
    def __init__(self, app: web.Application, rag: Rag, principal: Principal, *, background: bool = False) -> None:
        """`background`: for an ingest that has answered its upload already, so waits out rate limits instead."""
        self._app, self._rag, self._principal, self._background = app, rag, principal, background

    async def passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Through the RAG's and caller's batcher (gateway.rag.batcher): other uploads' passages share the calls
        (background ingests' apart, so that an upload waiting for its answer never waits out a limit for them)."""
        key = self._principal.api_key
        owner = (
            self._rag.id,
            self._rag.embedding_model,
            key.key_id if key else "",
            self._principal.user_id or "",
            self._background,
        )
        return await self._app[BATCHERS].get(owner).embed(texts, self._passage_batch)

    async def require_embedding_model(self) -> None:
        """Refuse now, as embedding would, a RAG whose embedding model cannot be used (withdrawn from its tenant,
        deleted, repointed away): an upload embedded in the background has answered before embedding starts."""
        await self._route(self._rag.embedding_model, TaskType.EMBEDDING)

    async def _route(self, model: str, task: TaskType) -> Route:
        """The route of one of the RAG's models, if still the one it was saved with and usable in its tenant; the
        embedding model's goes to the model the RAG was created with, wherever an alias it names points now."""
        target = self._rag.embedding_target if task == TaskType.EMBEDDING else None
        route = await self._app[ACCESS].system_route(
            model, owner=self._rag.tenant_id, pins=self._rag.pins, target=target
        )
        require_task(route, task)
        return route

    async def _passage_batch(self, batch: list[str]) -> list[list[float]]:
        route = await self._route(self._rag.embedding_model, TaskType.EMBEDDING)
        while True:
            try:
                return await self._call(route, batch)
            except LimitExceeded as exc:
                wait = exc.retry_after() if self._background else None
                if wait is None:
                    raise
                await asyncio.sleep(wait)

    async def query(self, text: str) -> list[float]:
        return (await self._embed([text], query=True))[0]

    async def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        route = await self._route(self._rag.embedding_model, TaskType.EMBEDDING)
        batches = [list(texts[start : start + _BATCH]) for start in range(0, len(texts), _BATCH)]
        if query:
            batches = [with_prefix(batch, route.query_prefix) for batch in batches]
        if len(batches) == 1:
            return await self._call(route, batches[0])
        slots = asyncio.Semaphore(_IN_FLIGHT)

        async def embed(batch: list[str]) -> list[list[float]]:
            async with slots:
                return await self._call(route, batch)

        calls = [asyncio.ensure_future(embed(batch)) for batch in batches]
        try:
            done = await asyncio.gather(*calls)
        except BaseException:
            # The first failure fails the whole list: the batches still waiting or in flight are not needed.
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            raise
        return [vector for vectors in done for vector in vectors]

    async def _call(self, route: Route, batch: list[str]) -> list[list[float]]:
        payload = {"model": route.public_model_id, "input": batch}
        return await post_metered(
            self._app,
            self._rag,
            self._principal,
            route,
            surface=Surface.EMBEDDINGS,
            payload=payload,
            parse=lambda raw: _parse(raw, len(batch)),
        )

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Relevance of each document to the query by the RAG's rerank model (through the gateway, metered as a
        rerank call of the RAG's owner), in the documents' order."""
        assert self._rag.rerank_model is not None
        route = await self._route(self._rag.rerank_model, TaskType.RERANK)
        payload = {
            "model": route.public_model_id,
            "query": with_prefix(query, route.query_prefix),
            "documents": list(documents),
        }
        return await post_metered(
            self._app,
            self._rag,
            self._principal,
            route,
            surface=Surface.RERANK,
            payload=payload,
            parse=lambda raw: _parse_rerank(raw, len(documents)),
        )


async def post_metered(
    app: web.Application,
    rag: Rag,
    principal: Principal,
    route: Route,
    *,
    surface: Surface,
    payload: dict[str, Any],
    parse: Callable[[bytes], tuple[T, int]],
) -> T:
    """POST one request to the route's upstream, translated for its provider, under the caller's limits, and queue
    one usage event for it."""
    kind = CallKind.EMBEDDING if surface == Surface.EMBEDDINGS else CallKind.RERANK
    translator = app[TRANSLATORS][route.provider]
    body = orjson.dumps(translator.body(route, payload))
    headers = {"Content-Type": "application/json", **translator.headers(route)}
    limiter = app[LIMITER]
    grant: Grant | None = None
    started, status, tokens, received = time.perf_counter(), 200, 0, 0
    try:
        grant = await limiter.admit(principal, route.public_model_id, input_tokens(kind, len(body)), with_slots=False)
        resp = await open_upstream(
            app[HTTP],
            "POST",
            translator.url(route, surface),
            headers=headers,
            body=body,
            route=route,
            principal=principal,
        )
        raw = await read_answer(resp, surface)
        received = len(raw)
        result, tokens = parse(raw)
        return result
    except LimitExceeded:
        status = 429
        raise
    except Exception:
        status = 502
        raise
    finally:
        if grant is not None:
            await _settle(limiter, grant, status, tokens)
        key = principal.api_key
        app[METER].usage(
            UsageEvent(
                tenant_id=rag.tenant_id or "",
                api_key_id=key.key_id if key else "",
                user_id=principal.user_id or "",
                model_id=route.public_model_id,
                call_kind=int(kind),
                target_kind=int(route.ref.kind),
                target_name=route.ref.name,
                status=status,
                latency_ms=(time.perf_counter() - started) * 1000,
                request_bytes=len(body),
                response_bytes=received,
                embedding_tokens=tokens if kind == CallKind.EMBEDDING else 0,
                rerank_tokens=tokens if kind == CallKind.RERANK else 0,
                total_tokens=tokens,
            )
        )


async def _settle(limiter: Limiter, grant: Grant, status: int, tokens: int) -> None:
    """As gateway.calls settles a model call: to the usage reported; an answer without one (or a caller gone
    meanwhile) keeps its reservation; a failed call gives it back."""
    try:
        await limiter.finish(grant, (tokens or None) if status == 200 else 0)
    except Exception:  # settling must never cost the call its usage event
        log.exception("could not settle a RAG model call's rate-limit reservation")


def _index(item: dict[str, Any]) -> int:
    """An answer item's `index`: an integer, not a float or numeric string that would name another input."""
    index = item["index"]
    if type(index) is not int:
        raise TypeError("index")
    return index


def _parse_rerank(raw: bytes, expected: int) -> tuple[list[float], int]:
    try:
        parsed = orjson.loads(raw)
        by_index = {_index(item): float(item["relevance_score"]) for item in parsed["results"]}
        usage = parsed.get("usage") or {}
        tokens = count_or_zero(usage.get("total_tokens")) or count_or_zero(usage.get("prompt_tokens"))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise UpstreamFailed("The rerank model returned an invalid response.", retryable=True) from None
    if sorted(by_index) != list(range(expected)) or len(parsed["results"]) != expected:
        raise UpstreamFailed("The rerank model returned an invalid response.", retryable=True)
    return [by_index[i] for i in range(expected)], tokens


def _parse(raw: bytes, expected: int) -> tuple[list[list[float]], int]:
    try:
        parsed = orjson.loads(raw)
        items = sorted(parsed["data"], key=_index)
        vectors = [[float(x) for x in item["embedding"]] for item in items]
        usage = parsed.get("usage") or {}
        tokens = count_or_zero(usage.get("prompt_tokens")) or count_or_zero(usage.get("total_tokens"))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise UpstreamFailed("The embedding model returned an invalid response.", retryable=True) from None
    if [_index(item) for item in items] != list(range(expected)):  # each input's vector once, none other
        raise UpstreamFailed("The embedding model returned an invalid response.", retryable=True)
    if not vectors or any(len(v) != len(vectors[0]) or not v for v in vectors):
        raise UpstreamFailed("The embedding model returned an invalid response.", retryable=True)
    return vectors, tokens
