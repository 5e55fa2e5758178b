"""Usage and traffic metering, written off the hot path, by every process that serves requests.

The gateway records a usage event per model call and counts every HTTP request; the management server counts every
request too (so platform traffic reads count every request served, including ones that never reached a model).
Handlers call `Meter.usage(event)`, which only appends to a list, and `Meter.traffic(...)`, which adds the request
to its second's count: traffic is read only as sums per bucket (the finest is a minute, aligned to whole minutes),
so requests of one service, status and second become one `api_traffic` row carrying how many they were. Counts and
byte totals stay exact; a request's time is kept to the second. That turned a thousand rows per flush at load into
a handful, and spares each request an event object.
One background task per process writes them in batches (a few statements per table, see `_insert_sql`); `close()`
drains whatever is left, so a graceful shutdown (SIGTERM) loses nothing. Events carry counts, ids and sizes only,
never model input or output.

A call that content capture covers (server.capture) comes with its exchange: the exchange's bodies are sealed by the
flusher (off the request path) and its row is written in the transaction that writes its usage row, whose
`capture_id` names it, so neither is ever written without the other.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any, TypeAlias

import orjson
from sqlalchemy import Table, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from server.capture.exchange import Exchange
from server.capture.store import EXCHANGE_SHAPE, exchange_row
from server.store.db import Database
from server.store.models import ApiTrafficRow, CapturedExchangeRow, UsageEventRow, utcnow

__all__ = ["CallKind", "Meter", "UsageEvent"]

log = logging.getLogger("switchboard.metering")

_BATCH = 1000
_LINGER_SECONDS = 0.5  # how long the flusher waits for more events before writing a batch


class CallKind(IntEnum):
    """Numbers match platform.metering.v1.CallKind."""

    CHAT_COMPLETION = 1
    RESPONSE = 2
    EMBEDDING = 3
    RERANK = 4
    TRANSCRIPTION = 5
    MCP_TOOL_CALL = 6
    RAG_CONTEXT = 7


@dataclass
class UsageEvent:
    tenant_id: str
    api_key_id: str
    user_id: str
    model_id: str
    call_kind: int
    target_kind: int = 0
    target_name: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    rerank_tokens: int = 0
    total_tokens: int = 0
    status: int = 0
    latency_ms: float = 0.0
    request_bytes: int = 0
    response_bytes: int = 0
    capture_id: str | None = None  # the captured exchange of the call (server.capture), written with it
    occurred_at: datetime = field(default_factory=utcnow)


# (service, status, second since the epoch) -> [requests, request bytes, response bytes]
_TrafficCounts: TypeAlias = dict[tuple[str, int, int], list[int]]
_USAGE_COLUMNS = tuple(f.name for f in fields(UsageEvent) if f.name != "occurred_at")
_USAGE_VALUES = operator.attrgetter(*_USAGE_COLUMNS)  # a row is then one C-level call plus the time
_USAGE_SHAPE = (*_USAGE_COLUMNS, "occurred_at")
_TRAFFIC_SHAPE = ("service", "status", "requests", "request_bytes", "response_bytes", "occurred_at")


_USAGE: Table = UsageEventRow.__table__  # type: ignore[assignment]
_TRAFFIC: Table = ApiTrafficRow.__table__  # type: ignore[assignment]
_EXCHANGES: Table = CapturedExchangeRow.__table__  # type: ignore[assignment]
Seal = Callable[[bytes], str]


def _sqlite_time(value: datetime) -> str:
    # SQLAlchemy's SQLite DATETIME storage format (YYYY-MM-DD HH:MM:SS.ffffff); isoformat is faster than strftime
    return value.isoformat(" ", "microseconds")[:26]


# Rows per multi-row INSERT on SQLite: 100 x 18 columns stays far below its 32,766 bound parameters.
_SQLITE_ROWS_PER_STATEMENT = 100


@functools.cache
def _insert_sql(table: Table, dialect: Dialect, columns: tuple[str, ...], rows: int = 1) -> str:
    """The INSERT of a batch, built once per shape. Not an executemany: SQLite's driver gives up and retakes the GIL
    around every row it steps, and on a busy event loop each retake waits for the loop to yield (a 700-row batch took
    0.3-1.2 s and stalled the loop as often), while PostgreSQL's driver spends event-loop CPU on every row. SQLite gets
    multi-row VALUES (one GIL release per statement); PostgreSQL gets the batch as one JSON array of row arrays."""
    names = ", ".join(columns)
    if dialect.name == "sqlite":
        row = f"({', '.join(['?'] * len(columns))})"
        return f"INSERT INTO {table.name} ({names}) VALUES {', '.join([row] * rows)}"  # noqa: S608
    casts = [table.c[name].type.compile(dialect=dialect) for name in columns]
    values = ", ".join(f"(v->>{i})::{cast}" for i, cast in enumerate(casts))
    return f"INSERT INTO {table.name} ({names}) SELECT {values} FROM json_array_elements(%s::json) AS r(v)"  # noqa: S608


def _usage_rows(events: list[UsageEvent], time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    return [(*_USAGE_VALUES(e), time_of(e.occurred_at)) for e in events]


def _timed_rows(rows: list[tuple[Any, ...]], time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """Rows whose last value is their time, that time as the dialect takes it."""
    return [(*row[:-1], time_of(row[-1])) for row in rows]


def _traffic_rows(counts: _TrafficCounts, time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    return [
        (service, status, requests, received, sent, time_of(datetime.fromtimestamp(second, UTC)))
        for (service, status, second), (requests, received, sent) in counts.items()
    ]


async def _insert(
    session: AsyncSession,
    table: Table,
    shape: tuple[str, ...],
    rows_of: Callable[[Callable[[datetime], Any]], list[tuple[Any, ...]]],
) -> None:
    """A non-empty batch in few statements on SQLite and PostgreSQL (see `_insert_sql`); elsewhere a Core
    executemany. `rows_of(time_of)` gives the rows in `shape`'s order, each occurred_at (last) passed through
    `time_of`: this runs on the event loop, and each dialect takes the time in the form that costs it least."""
    dialect = session.get_bind().dialect
    if dialect.name not in ("sqlite", "postgresql"):
        rows = rows_of(lambda value: value)
        await session.execute(insert(table), [dict(zip(shape, row, strict=True)) for row in rows])
        return
    connection = await session.connection()
    if dialect.name == "postgresql":
        rows = rows_of(lambda value: value)  # orjson writes aware datetimes as RFC 3339
        await connection.exec_driver_sql(_insert_sql(table, dialect, shape), (orjson.dumps(rows).decode(),))
        return
    rows = rows_of(_sqlite_time)
    for start in range(0, len(rows), _SQLITE_ROWS_PER_STATEMENT):
        chunk = rows[start : start + _SQLITE_ROWS_PER_STATEMENT]
        flat = [value for row in chunk for value in row]
        await connection.exec_driver_sql(_insert_sql(table, dialect, shape, len(chunk)), tuple(flat))


class Meter:
    """Usage events wait in a plain list (appending costs the request one C call; an asyncio.Queue cost ten Python
    calls per event between put and get) and traffic in a dict of per-second counts, until the flusher takes them,
    at most `_BATCH` usage events per write. `seal` encrypts captured bodies (the platform's SecretBox); a meter
    without it stores no exchange."""

    def __init__(self, db: Database, seal: Seal | None = None) -> None:
        self._db = db
        self._seal = seal
        self._usage: list[UsageEvent] = []
        self._exchanges: dict[str, Exchange] = {}  # by capture id, until their usage event is written
        self._traffic: _TrafficCounts = {}
        self._wakeup: asyncio.Future[None] | None = None  # set while the flusher waits for a first event
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def start(self) -> None:
        if self._task is not None:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gateway-meter")

    def usage(self, event: UsageEvent) -> None:
        self._usage.append(event)
        if self._wakeup is not None:
            self._wake()

    def captured(self, event: UsageEvent, exchange: Exchange) -> None:
        """A call content capture covered: its usage event and its exchange, written together."""
        exchange.closed = True  # what aiohttp writes from now on is not the handler's answer to keep
        if self._seal is not None:
            event.capture_id = exchange.id
            self._exchanges[exchange.id] = exchange
        self._usage.append(event)
        if self._wakeup is not None:
            self._wake()

    def traffic(
        self, service: str, status: int, request_bytes: int, response_bytes: int, at: datetime | None = None
    ) -> None:
        """Count one request served (`at`: when, if not now)."""
        key = (service, status, int(time.time() if at is None else at.timestamp()))
        counts = self._traffic.get(key)
        if counts is None:
            self._traffic[key] = [1, request_bytes, response_bytes]
            if self._wakeup is not None:
                self._wake()
        else:
            counts[0] += 1
            counts[1] += request_bytes
            counts[2] += response_bytes

    def _wake(self) -> None:
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    async def close(self) -> None:
        """Write everything queued so far, then stop the flusher (never cancelled mid-write, so nothing is lost)."""
        if self._task is None:
            return
        self._closing = True  # no more lingering: write what is queued right away
        self._wake()
        await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            if not (self._usage or self._traffic):
                if self._closing:
                    return
                self._wakeup = asyncio.get_running_loop().create_future()
                await self._wakeup
                continue
            if not self._closing and len(self._usage) < _BATCH:
                await asyncio.sleep(_LINGER_SECONDS)  # let a batch gather; a backlog is written without pause
            usage, self._usage = self._usage[:_BATCH], self._usage[_BATCH:]
            traffic, self._traffic = self._traffic, {}
            exchanges = self._exchanges_of(usage) if self._exchanges else []
            await self._write(usage, traffic, exchanges)

    def _exchanges_of(self, usage: list[UsageEvent]) -> list[tuple[Any, ...]]:
        """The rows of the exchanges of these usage events, sealed here (once, before any retry)."""
        seal = self._seal
        rows = []
        for event in usage:
            exchange = self._exchanges.pop(event.capture_id, None) if event.capture_id else None
            if exchange is not None and seal is not None:
                rows.append(exchange_row(exchange, seal))
        return rows

    async def _write(
        self, usage: list[UsageEvent], traffic: _TrafficCounts, exchanges: list[tuple[Any, ...]] | None = None
    ) -> None:
        for attempt in range(3):
            try:
                async with self._db.transaction() as session:
                    if usage:
                        await _insert(session, _USAGE, _USAGE_SHAPE, functools.partial(_usage_rows, usage))
                    if exchanges:
                        rows_of = functools.partial(_timed_rows, exchanges)
                        await _insert(session, _EXCHANGES, EXCHANGE_SHAPE, rows_of)
                    if traffic:
                        await _insert(session, _TRAFFIC, _TRAFFIC_SHAPE, functools.partial(_traffic_rows, traffic))
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception(
                    "writing %d usage events and %d traffic counts failed (attempt %d)",
                    len(usage),
                    len(traffic),
                    attempt + 1,
                )
                await asyncio.sleep(0.5 * (attempt + 1))
        log.error("dropped %d usage events and %d traffic counts after retries", len(usage), len(traffic))
