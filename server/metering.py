"""Usage and traffic metering, written off the hot path, by every process that serves requests.

The gateway records a usage event per model call and counts every HTTP request; the management server counts every
request too (so platform traffic reads count every request served, including ones that never reached a model).
Handlers call `Meter.usage(event)`, which only appends to a list, and `Meter.traffic(...)`, which adds the request
to its second's count: traffic is read only as sums per bucket (the finest is a minute, aligned to whole minutes),
so requests of one service, status and second become one `api_traffic` row carrying how many they were. Counts and
byte totals stay exact; a request's time is kept to the second. That turned a thousand rows per flush at load into
a handful, and spares each request an event object.
One background task per process writes them in batches (a few statements per table, see `_insert_sql`); `close()`
drains whatever is left, so a graceful shutdown (SIGTERM) loses nothing. With a journal (server.metering_journal,
what the servers use) every event and counted request is also appended to a local file first, so a process killed
with kill -9 loses nothing either: the next meter on that directory writes what the dead one had not. Each usage
event carries a call id unique to it (`call_id`) and each traffic row the key of its batch and bucket
(`batch_key`); both are inserted ON CONFLICT DO NOTHING, so a batch written twice (replayed after it had committed)
lands once. Events carry counts, ids and sizes only, never model input or output.

A call that content capture covers (server.capture) comes with its exchange: the flusher seals a batch's exchanges
in a worker thread (off the request path and off the event loop; a group of each tenant's bodies at a time,
server.capture.store) and writes their rows in the transaction that writes their usage rows, whose `capture_id`
names them, so neither is ever written without the other. Exchanges live in memory only (the journal keeps no
content): a replayed call is written without its capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import operator
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import IntEnum
from pathlib import Path
from typing import Any, TypeAlias

import orjson
from sqlalchemy import Table, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from server.capture.exchange import Exchange
from server.capture.store import BODIES_SHAPE, EXCHANGE_SHAPE, SealedBatch, seal_exchanges
from server.failure_log import RepeatedFailure
from server.metering_journal import RESCAN_SECONDS, Journal, Segment
from server.nul_text import without_nul
from server.store.db import Database
from server.store.models import ApiTrafficRow, CapturedBodiesRow, CapturedExchangeRow, UsageEventRow, utcnow

__all__ = ["CallKind", "Meter", "UsageEvent"]

log = logging.getLogger("switchboard.metering")

_BATCH = 1000
_LINGER_SECONDS = 0.5  # how long the flusher waits for more events before writing a batch
_ATTEMPTS = 3  # writes of one batch before it is left to the journal (0.5 s, then 1 s apart)


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
    call_id: str = ""  # given by the meter (`Meter.usage`) unless set
    capture_id: str | None = None  # the captured exchange of the call (server.capture), written with it
    occurred_at: datetime = field(default_factory=utcnow)


# (service, status, second since the epoch) -> [requests, request bytes, response bytes]
_TrafficCounts: TypeAlias = dict[tuple[str, int, int], list[int]]
_USAGE_COLUMNS = tuple(f.name for f in fields(UsageEvent) if f.name != "occurred_at")
_USAGE_VALUES = operator.attrgetter(*_USAGE_COLUMNS)  # a row is then one C-level call plus the time
_USAGE_SHAPE = (*_USAGE_COLUMNS, "occurred_at")
_TRAFFIC_SHAPE = ("service", "status", "requests", "request_bytes", "response_bytes", "batch_key", "occurred_at")
# A journal line: ["u", usage columns..., occurred_at] for a usage event, ["t", service, status, second, request
# bytes, response bytes] for one request counted as traffic.
_LINE = orjson.OPT_APPEND_NEWLINE


_USAGE: Table = UsageEventRow.__table__  # type: ignore[assignment]
_TRAFFIC: Table = ApiTrafficRow.__table__  # type: ignore[assignment]
_EXCHANGES: Table = CapturedExchangeRow.__table__  # type: ignore[assignment]
_BODIES: Table = CapturedBodiesRow.__table__  # type: ignore[assignment]
Seal = Callable[[bytes], str]


@functools.lru_cache(maxsize=64)
def _sqlite_second(fields: tuple[int, int, int, int, int, int]) -> str:
    year, month, day, hour, minute, second = fields
    return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}."


def _sqlite_time(value: datetime) -> str:
    """SQLAlchemy's SQLite DATETIME storage format (YYYY-MM-DD HH:MM:SS.ffffff), its wall-clock time as given. The
    second's text is made once per second: isoformat, one C call, formats each of its eight fields with the C
    library's printf (14,000 instructions a row against 6,600 here; a captured call has two rows)."""
    second = _sqlite_second((value.year, value.month, value.day, value.hour, value.minute, value.second))
    return second + str(1_000_000 + value.microsecond)[1:]  # the microseconds, zero-padded to six digits


# Rows per multi-row INSERT on SQLite: 100 x 19 columns stays far below its 32,766 bound parameters.
_SQLITE_ROWS_PER_STATEMENT = 100


@functools.cache
def _insert_sql(table: Table, dialect: Dialect, columns: tuple[str, ...], rows: int = 1) -> str:
    """The INSERT of a batch, built once per shape. Not an executemany: SQLite's driver gives up and retakes the GIL
    around every row it steps, and on a busy event loop each retake waits for the loop to yield (a 700-row batch took
    0.3-1.2 s and stalled the loop as often), while PostgreSQL's driver spends event-loop CPU on every row. SQLite gets
    multi-row VALUES (one GIL release per statement); PostgreSQL gets the batch as one JSON array of row arrays."""
    names = ", ".join(columns)
    # ON CONFLICT DO NOTHING: a row already written (its call id or batch key taken) is skipped, not an error.
    if dialect.name == "sqlite":
        row = f"({', '.join(['?'] * len(columns))})"
        return f"INSERT INTO {table.name} ({names}) VALUES {', '.join([row] * rows)} ON CONFLICT DO NOTHING"  # noqa: S608
    casts = [table.c[name].type.compile(dialect=dialect) for name in columns]
    values = ", ".join(f"(v->>{i})::{cast}" for i, cast in enumerate(casts))
    return (
        f"INSERT INTO {table.name} ({names}) SELECT {values} FROM json_array_elements(%s::json) AS r(v) "  # noqa: S608
        "ON CONFLICT DO NOTHING"
    )


def _usage_rows(events: list[UsageEvent], time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    return [(*_USAGE_VALUES(e), time_of(e.occurred_at)) for e in events]


def _timed_rows(rows: list[tuple[Any, ...]], time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """Rows whose last value is their time, that time as the dialect takes it."""
    return [(*row[:-1], time_of(row[-1])) for row in rows]


def _traffic_rows(counts: _TrafficCounts, batch_id: str, time_of: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    return [
        (
            service,
            status,
            requests,
            received,
            sent,
            f"{batch_id}/{service}/{status}/{second}",
            time_of(datetime.fromtimestamp(second, UTC)),
        )
        for (service, status, second), (requests, received, sent) in counts.items()
    ]


def _count(counts: _TrafficCounts, key: tuple[str, int, int], request_bytes: int, response_bytes: int) -> bool:
    """Add one request to its bucket; True when the bucket is new."""
    bucket = counts.get(key)
    if bucket is None:
        counts[key] = [1, request_bytes, response_bytes]
        return True
    bucket[0] += 1
    bucket[1] += request_bytes
    bucket[2] += response_bytes
    return False


def _release_all(segments: list[Segment]) -> None:
    for segment in segments:
        segment.release()


def _read_segment(segment: Segment) -> tuple[list[UsageEvent], _TrafficCounts]:
    """A journal segment's events and traffic counts, as its writer held them for its batch."""
    usage: list[UsageEvent] = []
    traffic: _TrafficCounts = {}
    for line in segment.lines():
        try:
            kind, *values = orjson.loads(line)
            if kind == "u":
                *columns, occurred_at = values
                event = UsageEvent(**dict(zip(_USAGE_COLUMNS, columns, strict=True)))
                event.occurred_at = datetime.fromisoformat(occurred_at)
                usage.append(event)
            elif kind == "t":
                service, status, second, received, sent = values
                _count(traffic, (service, status, second), received, sent)
        except (ValueError, TypeError):  # a damaged line: the rest of the segment still counts
            log.warning("metering journal %s: an unreadable line left out", segment.path.name)
    return usage, traffic


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
        batch = orjson.dumps(rows)
        if b"\\u0000" in batch:  # `->>` cannot make NUL text: the batch was refused whole, and again at each replay
            batch = orjson.dumps([[without_nul(v) if isinstance(v, str) else v for v in row] for row in rows])
        await connection.exec_driver_sql(_insert_sql(table, dialect, shape), (batch.decode(),))
        return
    rows = rows_of(_sqlite_time)
    start = 0
    while start < len(rows):
        size = _statement_rows(len(rows) - start)
        chunk = rows[start : start + size]
        flat = [value for row in chunk for value in row]
        await connection.exec_driver_sql(_insert_sql(table, dialect, shape, size), tuple(flat))
        start += size


def _statement_rows(left: int) -> int:
    """How many of `left` rows the next multi-row INSERT takes: 100, else the largest power of two that fits. A few
    statement shapes per table, each parsed once and then found in the driver's statement cache (128 statements),
    where a remainder of any size from 1 to 99 was a new statement to parse on most batches."""
    if left >= _SQLITE_ROWS_PER_STATEMENT:
        return _SQLITE_ROWS_PER_STATEMENT
    return 1 << (left.bit_length() - 1)


class Meter:
    """Usage events wait in a plain list (appending costs the request one C call; an asyncio.Queue cost ten Python
    calls per event between put and get) and traffic in a dict of per-second counts, until the flusher takes them
    all at once, written `_BATCH` usage events per transaction. `journal_dir`: keep the journal there (see the
    module's docstring); without one, a process that dies loses what it had not written yet. `seal` encrypts
    captured bodies (the platform's SecretBox); a meter without it stores no exchange."""

    def __init__(self, db: Database, journal_dir: Path | None = None, *, seal: Seal | None = None) -> None:
        self._db = db
        self._seal = seal
        self._exchanges: dict[str, Exchange] = {}  # by capture id, until their usage event is written
        self._journal_dir = journal_dir
        self._journal: Journal | None = None  # opened by start(), in the process that meters
        self._usage: list[UsageEvent] = []
        self._traffic: _TrafficCounts = {}
        self._wakeup: asyncio.Future[None] | None = None  # set while the flusher waits for a first event
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        # Call ids: unique per meter (a random prefix) without costing each call a random draw.
        self._id_prefix = secrets.token_hex(6)
        self._ids = itertools.count(1)
        self._batches = itertools.count(1)
        self._failures = RepeatedFailure(log, "writing usage events and traffic counts")

    def start(self) -> None:
        if self._task is not None:
            return
        if self._journal_dir is not None and self._journal is None:
            try:
                self._journal = Journal(self._journal_dir)
            except OSError as exc:  # a read-only or missing volume must not keep the server from serving
                log.error(
                    "the metering journal cannot be kept in %s (%s): rows are not protected",
                    self._journal_dir,
                    exc.strerror,
                )
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gateway-meter")

    def usage(self, event: UsageEvent) -> None:
        if not event.call_id:
            event.call_id = f"{self._id_prefix}{next(self._ids):x}"
        self._usage.append(event)
        if self._journal is not None:
            self._journal.append(orjson.dumps(("u", *_USAGE_VALUES(event), event.occurred_at), option=_LINE))
        if self._wakeup is not None:
            self._wake()

    def traffic(
        self, service: str, status: int, request_bytes: int, response_bytes: int, at: datetime | None = None
    ) -> None:
        """Count one request served (`at`: when, if not now)."""
        second = int(time.time() if at is None else at.timestamp())
        if self._journal is not None:
            line = ("t", service, status, second, request_bytes, response_bytes)
            self._journal.append(orjson.dumps(line, option=_LINE))
        if _count(self._traffic, (service, status, second), request_bytes, response_bytes) and self._wakeup is not None:
            self._wake()

    def captured(self, event: UsageEvent, exchange: Exchange) -> None:
        """A call content capture covered: its usage event and its exchange, written together."""
        exchange.closed = True  # what aiohttp writes from now on is not the handler's answer to keep
        if self._seal is not None:
            event.capture_id = exchange.id
            self._exchanges[exchange.id] = exchange
        self.usage(event)

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
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    async def _run(self) -> None:
        await self._prepare()
        await self._replay()
        rescan_at = time.monotonic() + RESCAN_SECONDS
        while True:
            if time.monotonic() >= rescan_at:  # here, not after a write: an idle meter must rescan too, not spin
                await self._replay()
                rescan_at = time.monotonic() + RESCAN_SECONDS
            if not (self._usage or self._traffic):
                if self._closing:
                    # Batches the database refused earlier (kept in the journal): one more attempt before the
                    # process goes, rather than waiting for the next start on this directory. Requests still
                    # running meanwhile may record more: those are written too before the end.
                    await self._replay()
                    if not (self._usage or self._traffic):
                        return
                    continue
                self._wakeup = asyncio.get_running_loop().create_future()
                with contextlib.suppress(TimeoutError):  # woken by an event, or in time to rescan
                    await asyncio.wait_for(self._wakeup, max(0.0, rescan_at - time.monotonic()))
                self._wakeup = None
                continue
            if not self._closing and len(self._usage) < _BATCH:
                await asyncio.sleep(_LINGER_SECONDS)  # let a batch gather; a backlog is written without pause
            # Taken with the segment that journaled them, in one step: the segment holds exactly this batch.
            usage, self._usage = self._usage, []
            traffic, self._traffic = self._traffic, {}
            segment = self._journal.rotate() if self._journal is not None else None
            if segment is None:
                await self._write(usage, traffic, f"{self._id_prefix}-{next(self._batches)}")
            else:
                await self._settle(segment, usage, traffic)
            await self._prepare()

    async def _prepare(self) -> None:
        """The journal's next segment, opened here on a thread so that the next rotation (on the loop) only takes it.
        Only this task rotates, so the two never overlap."""
        if self._journal is not None:
            await asyncio.to_thread(self._journal.prepare)

    async def _settle(self, segment: Segment, usage: list[UsageEvent], traffic: _TrafficCounts) -> bool:
        """Write a journaled batch; delete its segment once written, keep it for a replay when not. True when
        written."""
        assert self._journal is not None
        self._journal.forget(segment)
        try:
            await asyncio.to_thread(segment.sync)  # durable before it is only in the database's hands
            written = await self._write(usage, traffic, segment.batch_id)
        except BaseException:
            segment.release()
            raise
        # Off the loop: unmapping and deleting a file took 3-20 ms here, twice a second.
        await asyncio.to_thread(segment.discard if written else segment.release)
        return written

    async def _replay(self) -> None:
        """Write the batches of segments nobody holds any more (their process died, or their write failed)."""
        if self._journal is None:
            return
        segments = await asyncio.to_thread(self._journal.leftovers)
        for index, segment in enumerate(segments):
            usage, traffic = await asyncio.to_thread(_read_segment, segment)
            if not (usage or traffic):  # an empty one: a dead process's spare, or a segment it wrote nothing to
                await asyncio.to_thread(segment.discard)
                continue
            for event in usage:
                event.capture_id = None  # its exchange was in the memory of the process that journaled it
            log.warning(
                "metering journal: replaying %d usage events and %d traffic counts (left by an earlier process or "
                "a failed write)",
                len(usage),
                len(traffic),
            )
            if not await self._settle(segment, usage, traffic):
                # The database refused this batch: the others would wait out the same retries each (a backlog of
                # an outage, a batch every two seconds), holding up new batches. The next rescan tries again.
                await asyncio.to_thread(_release_all, segments[index + 1 :])
                return

    async def _write(self, usage: list[UsageEvent], traffic: _TrafficCounts, batch_id: str) -> bool:
        """The batch in transactions of at most `_BATCH` usage events (the traffic with the first); False when one
        failed beyond the retries (what was written stays written: the rows are idempotent)."""
        chunks = [usage[start : start + _BATCH] for start in range(0, len(usage), _BATCH)] or [[]]
        for index, chunk in enumerate(chunks):
            if not await self._write_chunk(chunk, traffic if index == 0 else {}, batch_id):
                return False
        return True

    async def _sealed(self, usage: list[UsageEvent]) -> SealedBatch | None:
        """The rows of the exchanges of these usage events, sealed here (once, before any retry) in a worker thread:
        the compressor (Zstandard) releases the GIL, so the event loop runs meanwhile, and a batch of long bodies
        takes milliseconds to compress."""
        seal, pop = self._seal, self._exchanges.pop
        exchanges = [found for event in usage if event.capture_id and (found := pop(event.capture_id, None))]
        if not exchanges or seal is None:
            return None
        return await asyncio.to_thread(seal_exchanges, exchanges, seal)

    async def _write_chunk(self, usage: list[UsageEvent], traffic: _TrafficCounts, batch_id: str) -> bool:
        sealed = await self._sealed(usage) if self._exchanges else None
        for attempt in range(_ATTEMPTS):
            try:
                async with self._db.transaction() as session:
                    if usage:
                        await _insert(session, _USAGE, _USAGE_SHAPE, functools.partial(_usage_rows, usage))
                    if sealed is not None:
                        await _insert(session, _BODIES, BODIES_SHAPE, functools.partial(_timed_rows, sealed.bodies))
                        rows_of = functools.partial(_timed_rows, sealed.exchanges)
                        await _insert(session, _EXCHANGES, EXCHANGE_SHAPE, rows_of)
                    if traffic:
                        rows = functools.partial(_traffic_rows, traffic, batch_id)
                        await _insert(session, _TRAFFIC, _TRAFFIC_SHAPE, rows)
                self._failures.succeeded()
                return True
            except asyncio.CancelledError:
                raise
            except Exception:
                last = attempt + 1 == _ATTEMPTS
                self._failures.failed(
                    "writing %d usage events and %d traffic counts failed (attempt %d of %d)%s",
                    len(usage),
                    len(traffic),
                    attempt + 1,
                    _ATTEMPTS,
                    "; the metering journal keeps them for a later attempt" if last and self._journal else "",
                )
                if not last:  # after the last, the journal keeps the batch: no reason to wait
                    await asyncio.sleep(0.5 * (attempt + 1))
        if self._journal is None:  # lost: said every time
            log.error("dropped %d usage events and %d traffic counts after retries", len(usage), len(traffic))
        return False
