"""One metered inference call: who, which model and target, how many tokens, status, latency and bytes.

`async with metered(request, kind) as call:` wraps a surface handler; whatever happens inside (success, refusal,
upstream failure, client gone mid-stream) exactly one usage event is queued when it exits.

It is also where rate limits hold (gateway.limits): resolving the model admits the call (a 429 when a limit has no
room), each further model call of the Responses tool loop is admitted again (`next_model_call`), as is each model
call the gateway makes within the call (an agent's output guardrails: `resolve_within`), and on exit the token
reservations settle to the usage the answers reported and concurrency leases are given back. A model call whose usage
never became known (the client went away mid-stream, or the answer reported none) keeps its reservation, or counts
what its stream relayed when that is more (`relayed`, gateway.streaming); one that failed (an upstream failure, a
refusal) releases it, but for what its stream relayed before it broke. A preset agent's own output bound (its
`maxOutputTokens`, which it gives the base model when the caller sets none) stands in for the default output a call
without one reserves. The usage event of a stream whose usage never arrived carries the same estimate of its input
and relayed text (`metered_tokens`), limited or not.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from opentelemetry import trace

from gateway import metrics
from gateway.agents import AgentRoute
from gateway.capture import CAPTURE
from gateway.catalog import Route
from gateway.context import ACCESS, LIMIT_HEADERS, LIMITER, METER, PAYLOAD, PRINCIPAL, REQUEST_BYTES, TRACING
from gateway.limits import Grant, LimitExceeded
from gateway.limits.estimate import DEFAULT_OUTPUT_TOKENS, input_tokens, output_tokens, text_tokens
from server.domain.json_values import count_or_zero
from server.domain.principal import Principal
from server.errors import wire_error_for
from server.metering import CallKind, UsageEvent

__all__ = ["CLIENT_CLOSED", "GUARDRAIL_REFUSED", "Call", "metered"]

CLIENT_CLOSED = 499
GUARDRAIL_REFUSED = 451  # metered status of a call an output guardrail refused (the client itself sees a 200)
log = logging.getLogger("switchboard.gateway")


@dataclass
class Call:
    request: web.Request
    app: web.Application  # request.app, looked up once (each lookup is three Python calls)
    principal: Principal
    kind: CallKind
    model: str = ""
    route: Route | None = None
    status: int = 200
    response_bytes: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    grants: list[Grant] = field(default_factory=list)  # what the limiter holds for this call's model calls
    model_calls: int = 0
    admitted: bool = False  # the request itself was admitted (at its model's resolution)
    within: bool = False  # a model call the gateway makes within the request's own (an agent's guardrail)
    awaiting: int = 0  # the reservation of the last model call admitted (limited or not), until its usage is known
    awaiting_output: int = 0  # the part of it reserved for output
    relayed: int = 0  # the output tokens a stream of that model call relayed (estimated: gateway.streaming)
    last_used: int = 0  # the usage the last model call admitted reported (0 until it does)
    # What each earlier model call with a grant counts (its usage, or what `pending` said when the next was admitted):
    # each grant settles to its own call's count, in the windows it was admitted in.
    earlier_used: list[int] = field(default_factory=list)
    first_chunk_at: float = 0.0  # perf_counter() when a streamed answer's first bytes arrived (0: not streamed)

    async def resolve(self, model: str) -> Route:
        self.model = model
        self.route = await self.app[ACCESS].route(self.principal, model)
        await self._admit_first()
        return self.route

    async def resolve_target(self, model: str) -> Route | AgentRoute:
        """Like `resolve`, but a preset agent is returned as such; the call is then metered under the agent's id
        (the model the client named) against its base model's target."""
        self.model = model
        found = await self.app[ACCESS].target(self.principal, model)
        if isinstance(found, AgentRoute):
            self.route = found.base
            # The agent's bound goes to the base model when the caller set none (gateway.agents): reserve that.
            await self._admit_first(found.plan.sampling.max_output_tokens or DEFAULT_OUTPUT_TOKENS)
        else:
            self.route = found
            await self._admit_first()
        return found

    async def _admit_first(self, default_output: int = DEFAULT_OUTPUT_TOKENS) -> None:
        if not self.admitted:
            self.admitted = True
            body = self.request.get(REQUEST_BYTES, self.request.content_length or 0)
            await self._admit(body, self.request.get(PAYLOAD), with_slots=True, default_output=default_output)

    async def resolve_within(self, route: Route, payload: dict[str, Any]) -> None:
        """A model the gateway calls on the caller's behalf within the caller's own call (a preset agent's output
        guardrail, routed on the agent's authority): the caller's limits count it as a request with its own tokens,
        but it takes no concurrency slot, which the call it serves already holds."""
        self.model, self.route, self.within = route.public_model_id, route, True
        await self._admit(len(orjson.dumps(payload)), payload, with_slots=False)

    async def next_model_call(self, payload: dict[str, Any]) -> None:
        """Before each model call of a multi-call turn (the tool loop): the first was admitted with the request,
        each later one counts as a request of its own and reserves its own tokens."""
        self.model_calls += 1
        if self.model_calls > 1:
            await self._admit(len(orjson.dumps(payload)), payload, with_slots=False)

    async def _admit(
        self,
        body_bytes: int,
        payload: dict[str, Any] | None,
        *,
        with_slots: bool,
        default_output: int = DEFAULT_OUTPUT_TOKENS,
    ) -> None:
        """Admit one model call, reserving its input (`body_bytes`) and the output `payload` bounds."""
        output = output_tokens(self.kind, payload, default_output)
        reserve = input_tokens(self.kind, body_bytes) + output
        request = self.request
        route = self.route
        # A preset agent runs on its base model: that model's own limits hold for it too, or creating an agent
        # would be a way around them.
        base = route.public_model_id if route is not None and route.public_model_id != self.model else ""
        try:
            grant = await self.app[LIMITER].admit(
                self.principal, self.model, reserve, with_slots=with_slots, base_model=base
            )
        except LimitExceeded:  # its answer carries its own headers; an earlier call's grant no longer describes it
            request.pop(LIMIT_HEADERS, None)
            raise
        if len(self.earlier_used) < len(self.grants):  # the model call its last grant counted has ended
            self.earlier_used.append(self.last_used + self.pending())
        # Kept with or without a limit to hold it: metering estimates a cut-off stream's usage from these too.
        self.awaiting, self.awaiting_output, self.relayed, self.last_used = reserve, output, 0, 0
        if grant is not None:
            self.grants.append(grant)
            request[LIMIT_HEADERS] = grant.headers

    def pending(self, answered: bool = True) -> int:
        """What the last model call admitted counts while its usage is unknown. Answered: its reservation, or its
        input and what its stream relayed when that is more. Failed: nothing, unless its stream relayed text before
        it broke (the upstream produced that much): then its input and that text."""
        if not self.awaiting:
            return 0
        relayed = self.awaiting - self.awaiting_output + self.relayed
        if not answered:
            return relayed if self.relayed else 0
        return max(self.awaiting, relayed)

    def metered_tokens(self) -> dict[str, int]:
        """The call's usage as metered: what its answers reported, plus, for a last model call whose usage never
        arrived but whose stream relayed text (cut off, or broken upstream), its input and that text as estimated
        for the limits. A call that relayed nothing adds nothing: what it reserved is a bound, not a usage."""
        if not (self.awaiting and self.relayed):
            return self.tokens
        prompt = self.tokens.get("prompt_tokens", 0) + self.awaiting - self.awaiting_output
        completion = self.tokens.get("completion_tokens", 0) + self.relayed
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def count(self, usage: Any) -> None:
        """Record an OpenAI-style usage object (chat, embeddings, rerank or transcription token usage) of the call's
        one model call."""
        if not isinstance(usage, dict):
            return
        self.awaiting = 0
        prompt, completion = _prompt_and_completion(usage)
        total = count_or_zero(usage.get("total_tokens")) or prompt + completion
        self.last_used = total
        if self.kind == CallKind.EMBEDDING:
            self.tokens = {"embedding_tokens": prompt or total, "total_tokens": total}
        elif self.kind == CallKind.RERANK:
            self.tokens = {"rerank_tokens": total or prompt, "total_tokens": total or prompt}
        else:
            self.tokens = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}

    def count_answer(self, answer: dict[str, Any], size: int) -> None:
        """A non-streamed answer's usage. One that reports none is estimated as a stream cut off before its usage
        is: its input, and the answer's `size` bytes as text (a text-generating call only; metered as 0 tokens, a
        model server that leaves usage out answered for free)."""
        usage = answer.get("usage")
        if isinstance(usage, dict):
            self.count(usage)
        elif self.awaiting_output:
            self.relayed = text_tokens(size)

    def add(self, usage: Any) -> None:
        """Add the usage of one model call of a multi-call turn (the tool loop) as soon as it ends: a turn that fails
        at a later model call is still counted and metered for those that ran."""
        if not isinstance(usage, dict):
            return
        self.awaiting = 0
        prompt, completion = _prompt_and_completion(usage)
        self.last_used = prompt + completion
        prompt += self.tokens.get("prompt_tokens", 0)
        completion += self.tokens.get("completion_tokens", 0)
        self.tokens = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _prompt_and_completion(usage: dict[str, Any]) -> tuple[int, int]:
    """The input and output tokens of a usage object, under Chat Completions' names or Responses'."""
    prompt = count_or_zero(usage.get("prompt_tokens", usage.get("input_tokens")))
    return prompt, count_or_zero(usage.get("completion_tokens", usage.get("output_tokens")))


def _annotate(call: Call, tokens: dict[str, int]) -> None:
    """Ids and counts on the request's span; never model input or output."""
    span = trace.get_current_span()
    span.set_attribute("gen_ai.request.model", call.model)
    span.set_attribute("switchboard.call_kind", call.kind.name.lower())
    for name, value in tokens.items():
        span.set_attribute(f"switchboard.usage.{name}", value)


class metered:
    """Exactly one usage event per call, queued when the block exits, whatever happened inside."""

    __slots__ = ("_call", "_start")

    def __init__(self, request: web.Request, kind: CallKind) -> None:
        self._call = Call(request, request.app, request[PRINCIPAL], kind)
        self._start = time.perf_counter()

    async def __aenter__(self) -> Call:
        return self._call

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        call = self._call
        if isinstance(exc, Exception):
            call.status = wire_error_for(exc).http_status
        elif exc is not None:
            call.status = CLIENT_CLOSED  # cancelled: the client went away
        if call.grants:
            await _settle(call)
        request = call.request
        app = call.app
        tokens = call.metered_tokens()
        if app[TRACING]:
            _annotate(call, tokens)
        key = call.principal.api_key
        route = call.route
        if route is not None:  # a registered model: the only model label metrics take
            metrics.observe_tokens(route.metrics_model, tokens)
            if call.first_chunk_at:
                metrics.observe_first_token(route.metrics_model, call.first_chunk_at - self._start)
        event = UsageEvent(
            tenant_id=key.tenant_id if key else (call.principal.scoped_tenant_id or ""),
            api_key_id=key.key_id if key else "",
            user_id=call.principal.user_id or "",
            model_id=call.model,
            call_kind=int(call.kind),
            target_kind=int(route.ref.kind) if route else 0,
            target_name=route.ref.name if route else "",
            status=call.status,
            latency_ms=(time.perf_counter() - self._start) * 1000,
            request_bytes=request.get(REQUEST_BYTES, request.content_length or 0),
            response_bytes=call.response_bytes,
            prompt_tokens=tokens.get("prompt_tokens", 0),
            completion_tokens=tokens.get("completion_tokens", 0),
            embedding_tokens=tokens.get("embedding_tokens", 0),
            rerank_tokens=tokens.get("rerank_tokens", 0),
            total_tokens=tokens.get("total_tokens", 0),
        )
        exchange = request.get(CAPTURE)
        # A captured exchange is the client's request and answer, so it carries the request's own call's event; one
        # made within it (an agent's guardrail) is metered on its own, or the request's would replace it.
        if exchange is None or call.within:
            app[METER].usage(event)
        else:  # content capture: the event goes to the meter with the answer (gateway.capture)
            exchange.event = event


def _answered(status: int) -> bool:
    """Whether the call's last model call may have produced tokens: not when it failed or was refused."""
    return status < 400 or status in (CLIENT_CLOSED, GUARDRAIL_REFUSED)


async def _settle(call: Call) -> None:
    """Settle each model call's token reservation to what it counts, and free the call's leases. Each in the windows
    it was admitted in: a tool loop's model calls may fall in two minutes, and settling all of the turn's use against
    the last one's window drove that minute's count below zero (room beyond its limit)."""
    limiter = call.app[LIMITER]
    grants = call.grants
    try:
        for grant, used in zip(grants, call.earlier_used, strict=False):
            await limiter.finish(grant, used)
        if len(call.earlier_used) < len(grants):
            # What ran without a usage to show for it keeps its reservation (or what its stream relayed, when more):
            # settling it to nothing would make such calls free, however much they produced.
            await limiter.finish(grants[-1], call.last_used + call.pending(_answered(call.status)))
    except Exception:  # settling must never cost the call its usage event
        log.exception("could not settle a call's rate-limit reservation")
