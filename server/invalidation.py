"""Cross-replica cache invalidation: a committed change reaches every process's caches at once, not after their TTL.

Every write that changes what a per-process cache answers (keys, grants, sharing, groups, memberships, the model
registry, RAGs, MCP network policies) is noticed here, in one place, from the tables it touches: SQLAlchemy's
`after_flush` (ORM writes) and `do_orm_execute` (Core UPDATE/DELETE/INSERT through a session) events map each table
to a `Topic` (`TABLE_TOPICS`). Writers therefore call nothing; a write that must not invalidate anything (a key's
`last_used_at` bump on the hot path) says so with `execution_options(**QUIET)`.

- PostgreSQL: each topic is sent with `pg_notify` inside the writing transaction, so it is delivered only if the
  transaction commits, and after it commits (a replica that reloads on the notification reads the new rows). One
  `Listener` task per process holds a dedicated connection (not from the pool, application_name
  `switchboard-invalidation`) that LISTENs and hands each notification to the process's `Invalidations`. When that
  connection is lost the caches keep their TTL bound (`api_key_cache_seconds`, `mcp_network_policy_cache_seconds`);
  the listener reconnects with growing delays (0.1 s to 5 s) and on every (re)connect drops everything cached,
  since notifications sent meanwhile were missed.
- Every backend: the writing process also drops its own caches right after the commit (read-your-writes there).
- SQLite (one node, but several processes on one file: the management server and the gateway's workers): the
  writing process then appends a byte to a stamp beside the database file (`<file>.invalidated`); every process
  stats it every 0.1 s (`StampWatcher`) and drops everything it caches when it moved. Coarse, but a stat is all it
  costs while nothing changes.

Payloads name a topic and at most a few ids (a key id, a tenant and user id), never a secret. What is dropped:
`Topic.KEY` the key's verified lookups; `Topic.ACCESS` every route, model list and RAG list decision;
`Topic.MEMBERSHIP` one membership's (or a whole tenant's) cached roles, and the ACCESS caches; `Topic.NETWORK_POLICY`
the egress guard's policy set; `Topic.LIMITS` the gateway limiter's policies; `Topic.CAPTURE` the gateway's content
capture policies; `Topic.SESSION` which session tokens are signed out (server.session_revocations).
`Invalidations.received` counts what arrived from other processes (for /metrics).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from sqlalchemy import event, func, inspect, make_url, select
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction

from server import metrics

__all__ = [
    "APPLICATION_NAME",
    "CHANNEL",
    "QUIET",
    "TABLE_TOPICS",
    "Invalidations",
    "Listener",
    "StampWatcher",
    "Topic",
    "invalidations_info",
]

log = logging.getLogger("switchboard.invalidation")

CHANNEL = "switchboard_invalidate"
APPLICATION_NAME = "switchboard-invalidation"
QUIET = {"switchboard_quiet": True}  # execution options of a write that changes nothing any cache holds
_HUB = "switchboard_invalidations"  # session.info: the process's Invalidations
_PENDING = "switchboard_invalidations_pending"  # session.info: what this transaction changed, for after the commit
_SENT = "switchboard_invalidations_sent"  # session.info: payloads already NOTIFYed in this transaction
_FIRST_DELAY, _MAX_DELAY = 0.1, 5.0
_STAMP_POLL_SECONDS = 0.1
_STAMP_MAX_BYTES = 1 << 20


class Topic(enum.StrEnum):
    KEY = "key"  # ids: (key id,)
    ACCESS = "access"  # no ids: who may use which model or RAG, and what a model name routes to
    MEMBERSHIP = "membership"  # ids: (tenant id, user id) or (tenant id,) for a whole tenant
    NETWORK_POLICY = "network_policy"  # no ids
    LIMITS = "limits"  # no ids: rate limit and budget policies
    CAPTURE = "capture"  # no ids: content capture policies
    SESSION = "session"  # no ids: signed-out session tokens


TABLE_TOPICS: dict[str, Topic] = {
    "api_keys": Topic.KEY,
    "tenant_members": Topic.MEMBERSHIP,
    "tenants": Topic.MEMBERSHIP,
    "mcp_network_policies": Topic.NETWORK_POLICY,
    "limit_policies": Topic.LIMITS,
    "capture_policies": Topic.CAPTURE,
    "revoked_sessions": Topic.SESSION,
    "users": Topic.SESSION,  # a deprovisioned user's sessions (server.session_revocations)
    **dict.fromkeys(
        (
            "api_key_grants",
            "api_key_groups",
            "groups",
            "group_members",
            "resources",
            "resource_shares",
            "resource_permissions",
            "public_model_ids",
            "model_deployments",
            "external_models",
            "model_aliases",
            "preset_agents",
            "rag_deployments",
            "service_accounts",
        ),
        Topic.ACCESS,
    ),
}

Change = tuple[Topic, tuple[str, ...]]  # no ids: everything under the topic
Handler = Callable[[tuple[str, ...]], None]


class Invalidations:
    """One per process (held by its `Database`): which caches drop what on which topic."""

    def __init__(self, *, notify: bool, stamp: str | None = None) -> None:
        self.notify = notify  # PostgreSQL: send changes to the other processes
        self.stamp = stamp  # a SQLite file's stamp: touched after each commit that changed something
        self.received = 0  # notifications from the listener (other processes' changes and this one's own)
        self.listening = False  # the listener's connection is up: changes arrive within milliseconds
        self._handlers: dict[Topic, list[Handler]] = {topic: [] for topic in Topic}

    def on(self, topic: Topic, handler: Handler) -> None:
        """`handler(ids)` drops what the change names; called with `()` it drops everything under the topic."""
        self._handlers[topic].append(handler)

    def apply(self, changes: Iterable[Change]) -> None:
        for topic, ids in changes:
            for handler in self._handlers[topic]:
                handler(ids)
            if topic is Topic.MEMBERSHIP:  # a member's keys and groups reach models through the membership
                for handler in self._handlers[Topic.ACCESS]:
                    handler(())

    def flush(self) -> None:
        """Drop everything every cache holds (notifications may have been missed)."""
        self.apply((topic, ()) for topic in Topic)

    def receive(self, payload: str) -> None:
        self.received += 1
        try:
            parts = orjson.loads(payload)
            change = (Topic(parts[0]), tuple(str(p) for p in parts[1:]))
        except (orjson.JSONDecodeError, ValueError, TypeError, IndexError):
            log.warning("ignoring a malformed invalidation; dropping every cache instead")
            metrics.record_invalidation("all")
            self.flush()
            return
        metrics.record_invalidation(change[0].value)
        self.apply([change])


def invalidations_info(hub: Invalidations) -> dict[str, Any]:
    """The session info that makes a Database's writes announce their changes to `hub` (and, on PostgreSQL, to
    every other process)."""
    return {_HUB: hub}


def _encode(change: Change) -> str:
    return orjson.dumps([change[0].value, *change[1]]).decode()


def _row_change(obj: Any, deleted: bool) -> Change | None:
    table = getattr(getattr(obj, "__table__", None), "name", None)
    topic = TABLE_TOPICS.get(table or "")
    if topic is None:
        return None
    if topic is Topic.KEY:
        if not deleted and _only_last_used(obj):
            return None
        return (topic, (str(obj.id),)) if obj.id else (topic, ())
    if topic is Topic.MEMBERSHIP:
        if table == "tenants":
            return (topic, (str(obj.id),))
        return (topic, (str(obj.tenant_id), str(obj.user_id)))
    return (topic, ())


def _only_last_used(obj: Any) -> bool:
    state = inspect(obj)
    if state.pending or not state.has_identity:
        return False
    changed = {attr.key for attr in state.attrs if attr.history.has_changes()}
    return changed <= {"last_used_at"}


def _record(session: Session, changes: Iterable[Change | None]) -> None:
    hub: Invalidations | None = session.info.get(_HUB)
    if hub is None:
        return
    pending: set[Change] = session.info.setdefault(_PENDING, set())
    fresh = [c for c in changes if c is not None and c not in pending]
    if not fresh:
        return
    pending.update(fresh)
    if hub.notify:
        sent: set[str] = session.info.setdefault(_SENT, set())
        connection = session.connection()
        for change in fresh:
            payload = _encode(change)
            if payload not in sent:
                sent.add(payload)
                # Within the transaction: PostgreSQL delivers it on commit, and never if it rolls back.
                connection.execute(select(func.pg_notify(CHANNEL, payload)))


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _flush: UOWTransaction) -> None:
    if _HUB not in session.info:
        return
    changes = [_row_change(o, False) for o in session.new]
    changes += [_row_change(o, False) for o in session.dirty if session.is_modified(o)]
    changes += [_row_change(o, True) for o in session.deleted]
    _record(session, changes)


@event.listens_for(Session, "do_orm_execute")
def _do_orm_execute(state: ORMExecuteState) -> None:
    if not (state.is_update or state.is_delete or state.is_insert) or _HUB not in state.session.info:
        return
    if state.execution_options.get("switchboard_quiet") or state.statement.get_execution_options().get(
        "switchboard_quiet"
    ):
        return
    table = getattr(getattr(state.statement, "table", None), "name", "")
    topic = TABLE_TOPICS.get(table)
    if topic is not None:
        # A statement may touch any rows: drop everything under the topic (these writes are rare).
        _record(state.session, [(topic, ())])


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    hub: Invalidations | None = session.info.get(_HUB)
    changes: set[Change] = session.info.pop(_PENDING, set())
    session.info.pop(_SENT, None)
    if hub is not None and changes:
        hub.apply(sorted(changes))
        if hub.stamp is not None:
            _touch(hub.stamp)


def _touch(stamp: str) -> None:
    """One byte more (the size moves even when two commits share a coarse mtime tick); emptied now and then."""
    try:
        with open(stamp, "ab") as f:
            if f.tell() >= _STAMP_MAX_BYTES:
                f.truncate(0)
            f.write(b".")
    except OSError:
        log.warning("could not touch the invalidation stamp; other processes keep their cache bounds")


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, _previous: Any) -> None:
    session.info.pop(_SENT, None)  # a rolled-back savepoint's notifications are gone: resending is harmless
    if not session.in_transaction():  # the whole transaction rolled back: it changed nothing
        session.info.pop(_PENDING, None)


def _conninfo(database_url: str) -> str:
    """The libpq connection string of a SQLAlchemy PostgreSQL URL."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class _Follower:
    """What keeps this process's caches in step with other processes' writes: one task, started once the event loop
    runs, cancelled at shutdown."""

    _task_name = "invalidation"

    def __init__(self, hub: Invalidations) -> None:
        self._hub = hub
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._task_name)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._hub.listening = False

    async def _run(self) -> None:
        raise NotImplementedError


class Listener(_Follower):
    """The process's LISTEN connection (PostgreSQL only): `start()` once the event loop runs, `close()` at shutdown."""

    _task_name = "invalidation-listener"

    def __init__(self, database_url: str, hub: Invalidations) -> None:
        super().__init__(hub)
        self._conninfo = _conninfo(database_url)
        self.connects = 0  # successful (re)connects: tests and operators see reconnection happen

    async def _run(self) -> None:
        import psycopg

        delay = _FIRST_DELAY
        while True:
            try:
                connection = await psycopg.AsyncConnection.connect(
                    self._conninfo,
                    autocommit=True,
                    application_name=APPLICATION_NAME,
                    connect_timeout=5,
                    # A peer that vanished without closing is noticed in ~11 s; the TTL bound covers the gap.
                    keepalives=1,
                    keepalives_idle=5,
                    keepalives_interval=2,
                    keepalives_count=3,
                )
                async with connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    self._hub.flush()  # whatever changed while nobody listened
                    self._hub.listening = True
                    self.connects += 1
                    delay = _FIRST_DELAY
                    async for notification in connection.notifies():
                        self._hub.receive(notification.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("invalidation listener disconnected (%s); retrying in %.1f s", type(exc).__name__, delay)
            self._hub.listening = False
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)


class StampWatcher(_Follower):
    """SQLite's stand-in for the listener (one node, several processes on one file: the gateway's workers beside the
    management server): every 0.1 s, one stat of the file's stamp; when another process committed a change, drop
    everything cached (coarse, but a stat is all it costs while nothing changes)."""

    _task_name = "invalidation-stamp"

    def __init__(self, stamp: str, hub: Invalidations) -> None:
        super().__init__(hub)
        self._stamp = stamp

    def _state(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self._stamp)
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_size)

    async def _run(self) -> None:
        seen = self._state()
        self._hub.listening = True
        while True:
            await asyncio.sleep(_STAMP_POLL_SECONDS)
            now = self._state()
            if now != seen:
                seen = now
                self._hub.received += 1
                metrics.record_invalidation("all")
                self._hub.flush()
