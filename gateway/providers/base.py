"""What every provider translator does, and the one place upstream failures become domain errors.

A translator maps (route, surface) to an upstream URL, headers and JSON body. `open_upstream` sends the request and
turns every failure into a friendly `UpstreamFailed` / `QuotaExceeded`: the upstream's body, headers and our
credentials never reach the client or the log.

Every upstream connection goes through the egress guard (`server.egress`): `UpstreamSessions` holds one pooled
`server.upstream_http.UpstreamClient` per `Reach`, and a route is sent through the one matching who registered its
upstream, on connections pooled per calling tenant (`pool_partition`). Redirects are never followed (a 3xx is a
backend failure), so a provider key never travels to a second address.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from gateway import metrics
from gateway.catalog import Route
from server.domain.networks import Reach
from server.domain.principal import Principal
from server.egress import EgressGuard
from server.errors import QuotaExceeded, UpstreamFailed
from server.upstream_http import UpstreamBroke, UpstreamClient, UpstreamResponse

__all__ = [
    "AnswerBound",
    "Surface",
    "Translator",
    "UpstreamSessions",
    "answer_bound",
    "invalid_answer",
    "open_upstream",
    "parse_cost",
    "pool_partition",
    "read_answer",
    "upstream_error",
]

log = logging.getLogger("switchboard.gateway.upstream")

_MiB = 1024 * 1024


class Surface(StrEnum):
    """The OpenAI path suffix of each surface."""

    CHAT = "chat/completions"
    EMBEDDINGS = "embeddings"
    RERANK = "rerank"
    TRANSCRIPTIONS = "audio/transcriptions"


@dataclass(frozen=True, slots=True)
class AnswerBound:
    """What one answer read whole may cost a worker: its bytes, and what parsing them may allocate (`parse_cost`).
    Parsed JSON can take 24 times its size in Python objects (`[{"a":0},...]`: a dict per 8 bytes); a byte cap alone
    let a 64 MiB answer take a worker past 2 GiB."""

    size: int
    parsed: int


# Embeddings are the largest legitimate answers: 2048 inputs x 3072 dimensions is 6.3 M numbers; as JSON floats of
# 22 bytes ("-0.006929283495992422,") 133 MiB, pretty-printed one a line (OpenAI's layout) 187 MiB, which parse_cost
# puts at 560 and 670 MiB. 4096 dimensions (some open models) are a third more again. As base64: 32 MiB.
_EMBEDDINGS = AnswerBound(size=256 * _MiB, parsed=1024 * _MiB)
# Everything else is far smaller: a chat completion's longest answer (~128 k tokens, ~0.5 MB of text, 3 MB if every
# character were \u-escaped) even with a few choices or full top-20 logprobs for tens of thousands of tokens; rerank
# scores; the transcript of hours of audio with word timings (~10 MB).
_OTHER = AnswerBound(size=64 * _MiB, parsed=256 * _MiB)


def answer_bound(surface: Surface) -> AnswerBound:
    return _EMBEDDINGS if surface == Surface.EMBEDDINGS else _OTHER


def parse_cost(data: bytes) -> int:
    """An upper bound on the memory an answer of these bytes takes, read and parsed by orjson: summed over the
    pieces of one answer (every term counts single bytes). The text twice (its pieces, then joined); a dict with
    its slot in the parent 232 B, a list 120 B, any other value, key or string 48 B per separator or quote (CPython
    3.11 objects with their GC headers, in the allocator's 16-byte classes). Checked in tests/test_upstream_answers.py:
    1.8-5.2x what orjson itself requests (tracemalloc sees no GC headers or size classes) for hostile shapes and 2.9x
    for float embeddings; the most amplifying shape (a list per float) read and parsed grows a worker's peak RSS by
    90% of it."""
    return (
        2 * len(data)
        + 232 * data.count(b"{")
        + 120 * data.count(b"[")
        + 48 * (data.count(b",") + data.count(b":") + data.count(b'"'))
    )


class Translator(Protocol):
    def url(self, route: Route, surface: Surface) -> str:
        """The upstream URL for this surface (raises InvalidArgument when the provider lacks it)."""
        ...

    def headers(self, route: Route) -> dict[str, str]:
        """Authentication headers for the upstream."""
        ...

    def body(self, route: Route, payload: dict[str, Any]) -> dict[str, Any]:
        """The JSON body to send: the client's payload with the provider's model id."""
        ...

    def form_model(self, route: Route) -> str | None:
        """The `model` form field for multipart surfaces, or None to omit it."""
        ...


@dataclass(frozen=True)
class UpstreamSessions:
    """The process's pooled upstream clients, one per Reach, both guarded by the one egress guard."""

    platform: UpstreamClient
    tenant: UpstreamClient

    @classmethod
    def open(cls, guard: EgressGuard, **options: Any) -> UpstreamSessions:
        """`options` go to each UpstreamClient (connect and stall timeouts, keep-alive)."""
        return cls(UpstreamClient(guard, Reach.PLATFORM, **options), UpstreamClient(guard, Reach.TENANT, **options))

    def for_route(self, route: Route) -> UpstreamClient:
        return self.platform if route.reach == Reach.PLATFORM else self.tenant

    async def close(self) -> None:
        await self.platform.close()
        await self.tenant.close()


def pool_partition(principal: Principal) -> str:
    """Whose calls may share an upstream connection: the caller's tenant (a user acting outside any tenant: that user).

    HTTP/1.1 pairs answers with requests by order alone, so an upstream that sends one answer too many (a buggy proxy,
    a stray error page) has the next request on that connection receive it, a stranger's prompt and answer included,
    and no client can tell. The client closes such a connection as soon as a stray byte shows, but one stray answer
    can land before anything shows. Per tenant, not per upstream credential: a shared model (in-cluster, or granted
    to other tenants) serves many tenants with one credential, so only the tenant bounds whose answer that can be.
    Not finer (per key or user): every new connection costs a name lookup through the egress guard and, to hosted
    providers, a TLS handshake; within a tenant, callers share its models and data by its own policy."""
    if principal.api_key is not None:
        return f"tenant/{principal.api_key.tenant_id}"
    if principal.scoped_tenant_id:
        return f"tenant/{principal.scoped_tenant_id}"
    return f"user/{principal.user_id or ''}"


def upstream_error(status: int) -> UpstreamFailed | QuotaExceeded:
    if status == 429:
        return QuotaExceeded("The model provider is rate limiting requests right now. Please retry shortly.")
    if status >= 500 or status == 408:
        return UpstreamFailed("The model backend is temporarily unavailable. Please retry shortly.", retryable=True)
    return UpstreamFailed("The model backend could not process this request.", retryable=False)


_UNREACHABLE = UpstreamFailed("The model backend could not be reached. Please retry shortly.", retryable=True)


async def open_upstream(
    http: UpstreamSessions,
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    body: bytes = b"",
    route: Route,
    principal: Principal,
) -> UpstreamResponse:
    """Send the request on behalf of `principal`; return the response when its status is 2xx, else raise the mapped
    error. A destination the egress guard refuses raises its FailedPrecondition (naming the host only)."""
    started = time.perf_counter()
    try:
        resp = await http.for_route(route).request(
            method, url, headers=headers, body=body, partition=pool_partition(principal)
        )
    except ValueError:  # a header (a stored provider key, say) that would split the request: never sent
        log.warning("upstream of %s refused: a header it needs is not a valid HTTP header", route.ref.name)
        raise UpstreamFailed("The model backend is misconfigured.", retryable=False) from None
    except (TimeoutError, OSError, UpstreamBroke) as exc:
        log.warning("upstream of %s unreachable: %s", route.ref.name, type(exc).__name__)
        raise UpstreamFailed(_UNREACHABLE.message, retryable=True) from None
    metrics.observe_upstream(route.metrics_model, time.perf_counter() - started)
    if resp.status >= 300:  # 3xx included: redirects are never followed
        log.warning("upstream of %s answered HTTP %d", route.ref.name, resp.status)
        resp.release()
        raise upstream_error(resp.status)
    return resp


_TOO_LARGE = "The model backend's answer is too large to process."


def invalid_answer() -> UpstreamFailed:
    """An answer (or a stream's chunk) the gateway cannot read: the backend's failure, which the client may retry."""
    return UpstreamFailed("The model backend returned an invalid response.", retryable=True)


_MOST_PER_BYTE = parse_cost(b"{")  # so an answer up to bound.parsed / this many bytes needs no counting


async def read_answer(resp: UpstreamResponse, surface: Surface) -> bytes:
    """The whole answer, within the surface's `AnswerBound` (checked as it arrives: an answer past it is dropped, not
    buffered to its end), with the connection released; UpstreamFailed when the upstream breaks off, stalls or sends
    too much."""
    bound = answer_bound(surface)
    parts: list[bytes] = []
    size = cost = counted = 0  # parts[:counted] are in cost
    try:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit():
            length = int(declared)
            if length > bound.size:
                raise UpstreamFailed(_TOO_LARGE, retryable=False)
            if length * _MOST_PER_BYTE <= bound.parsed:  # too short to cost more than the bound: read it as it is
                return await resp.read(length)
        async for data in resp.chunks():
            parts.append(data)
            size += len(data)
            if size > bound.size:
                raise UpstreamFailed(_TOO_LARGE, retryable=False)
            if size * _MOST_PER_BYTE > bound.parsed:  # past ~1 MiB: what parsing it would cost starts to matter
                cost += sum(parse_cost(part) for part in parts[counted:])
                counted = len(parts)
                if cost > bound.parsed:
                    raise UpstreamFailed(_TOO_LARGE, retryable=False)
    except UpstreamBroke:
        raise UpstreamFailed("The model backend stopped responding.", retryable=True) from None
    except UpstreamFailed:
        log.warning("upstream answer refused: past the %s bound", surface.value)
        raise
    finally:
        resp.release()  # closes the connection unless the answer was read to its end
    return parts[0] if len(parts) == 1 else b"".join(parts)
