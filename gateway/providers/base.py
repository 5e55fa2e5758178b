"""What every provider translator does, and the one place upstream failures become domain errors.

A translator maps (route, surface) to an upstream URL, headers and JSON body. `open_upstream` sends the request and
turns every failure into a friendly `UpstreamFailed` / `QuotaExceeded`: the upstream's body, headers and our
credentials never reach the client or the log.

Every upstream connection goes through the egress guard (`server.egress`): `UpstreamSessions` holds one pooled
`server.upstream_http.UpstreamClient` per `Reach`, and a route is sent through the one matching who registered its
upstream. Redirects are never followed (a 3xx is a backend failure), so a provider key never travels to a second
address.
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
from server.egress import EgressGuard
from server.errors import QuotaExceeded, UpstreamFailed
from server.upstream_http import UpstreamBroke, UpstreamClient, UpstreamResponse

__all__ = ["MAX_ANSWER", "Surface", "Translator", "UpstreamSessions", "open_upstream", "read_answer", "upstream_error"]

log = logging.getLogger("switchboard.gateway.upstream")

# An upstream answer read whole is refused past this size (embeddings of a large batch are the biggest legitimate
# ones): a misbehaving upstream cannot make the gateway buffer without bound.
MAX_ANSWER = 256 * 1024 * 1024


class Surface(StrEnum):
    """The OpenAI path suffix of each surface."""

    CHAT = "chat/completions"
    EMBEDDINGS = "embeddings"
    RERANK = "rerank"
    TRANSCRIPTIONS = "audio/transcriptions"


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
) -> UpstreamResponse:
    """Send the request; return the response when its status is 2xx, else raise the mapped error. A destination the
    egress guard refuses raises its FailedPrecondition (naming the host only)."""
    started = time.perf_counter()
    try:
        resp = await http.for_route(route).request(method, url, headers=headers, body=body)
    except ValueError:  # a header (a stored provider key, say) that would split the request: never sent
        log.warning("upstream of %s refused: a header it needs is not a valid HTTP header", route.ref.name)
        raise UpstreamFailed("The model backend is misconfigured.", retryable=False) from None
    except (TimeoutError, OSError, UpstreamBroke) as exc:
        log.warning("upstream of %s unreachable: %s", route.ref.name, type(exc).__name__)
        raise UpstreamFailed(_UNREACHABLE.message, retryable=True) from None
    metrics.observe_upstream(route.public_model_id, time.perf_counter() - started)
    if resp.status >= 300:  # 3xx included: redirects are never followed
        log.warning("upstream of %s answered HTTP %d", route.ref.name, resp.status)
        resp.release()
        raise upstream_error(resp.status)
    return resp


async def read_answer(resp: UpstreamResponse) -> bytes:
    """The whole answer (at most MAX_ANSWER bytes), with the connection released; UpstreamFailed when the upstream
    breaks off, stalls or sends too much."""
    try:
        return await resp.read(MAX_ANSWER)
    except UpstreamBroke:
        raise UpstreamFailed("The model backend stopped responding.", retryable=True) from None
    finally:
        resp.release()
