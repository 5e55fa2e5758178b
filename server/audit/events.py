"""An audit event as plain data. Numbers of the enums match switchboard.audit.v1."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum

from server.domain.principal import Principal
from server.store.db import new_id

__all__ = ["Actor", "ActorType", "AuditEvent", "Outcome", "Source", "actor_of", "outcome_of"]


class ActorType(IntEnum):
    ANONYMOUS = 1
    USER = 2
    API_KEY = 3


class Source(IntEnum):
    MANAGEMENT = 1
    GATEWAY = 2


class Outcome(IntEnum):
    ALLOWED = 1
    REFUSED = 2
    FAILED = 3


# Codes that say the platform failed, not that the caller was refused.
_FAILURE_CODES = frozenset({"internal", "unknown", "unavailable", "data_loss", "deadline_exceeded", "canceled"})


def outcome_of(code: str) -> Outcome:
    """The outcome a call answered with `code` (a Connect code name; empty for success) had."""
    if not code:
        return Outcome.ALLOWED
    return Outcome.FAILED if code in _FAILURE_CODES else Outcome.REFUSED


@dataclass(frozen=True)
class Actor:
    type: ActorType = ActorType.ANONYMOUS
    user_id: str = ""
    service_account_id: str = ""
    api_key_id: str = ""

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(i for i in (self.user_id, self.service_account_id, self.api_key_id) if i)


def actor_of(principal: Principal | None) -> Actor:
    """Who a principal is, by ids only (never a key's secret nor a token)."""
    if principal is None:
        return Actor()
    key = principal.api_key
    if key is None:
        return Actor(ActorType.USER, user_id=principal.user_id or "")
    return Actor(
        ActorType.API_KEY,
        user_id=key.owner_user_id or "",
        service_account_id=key.service_account_id or "",
        api_key_id=key.key_id,
    )


def _new_event_id() -> str:
    return new_id("aud")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class AuditEvent:
    method: str
    outcome: Outcome
    source: Source = Source.MANAGEMENT
    code: str = ""
    tenant_id: str = ""
    actor: Actor = field(default_factory=Actor)
    peer_address: str = ""
    resource_kind: str = ""
    resource_name: str = ""
    id: str = field(default_factory=_new_event_id)
    time: datetime = field(default_factory=_now)
