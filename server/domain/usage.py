"""Reads of metered usage: token and call series, token totals, and HTTP traffic, for platform operators.

The gateway writes one `usage_events` row per call, and `api_traffic` rows count HTTP requests per service, status
and second (`server.metering`); these functions aggregate them in the database (one GROUP BY query per read,
whatever the number of rows), so a read costs the same for ten events or ten million within the time index.

Buckets: the server picks the step it returns. A requested step is rounded up to the next of a fixed ladder
(1 min … 1 day) and coarsened further until the window holds at most `MAX_BUCKETS` buckets; buckets are aligned to
multiples of the step since the Unix epoch (so the same data gives the same points whatever the window), and each
point carries its own window, clipped to the query's. Series are zero-filled: a bucket without calls had none, and
its point says so with the same figures as any other point, zeros written out (`count: 0`, never an absent count).

What is grouped "by model": token reads count model calls only (chat, responses, embeddings, rerank,
transcription), so their model groupings hold model ids and nothing else; MCP tool calls and RAG retrievals carry
no tokens and no model. Call counts select one kind, and group that kind by the resource it called: the model id for
model calls, the registered MCP server for tool calls, the RAG for retrievals (resource_ids filters the same ids).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from itertools import groupby
from operator import itemgetter
from typing import Any, Generic, TypeVar

from sqlalchemy import BigInteger, ColumnElement, Integer, and_, case, cast, extract, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import Principal
from server.domain.validation import limit_ids
from server.errors import InvalidArgument
from server.metering import CallKind
from server.permissions import ResourceRef, require_platform_scope
from server.store.models import ApiTrafficRow, UsageEventRow

__all__ = [
    "MAX_BUCKETS",
    "MODEL_CALL_KINDS",
    "PERCENTILES",
    "STEPS",
    "Bucket",
    "CallCounts",
    "CallStats",
    "Filters",
    "GroupBy",
    "Series",
    "TokenTotals",
    "TrafficTotals",
    "UsageQuery",
    "Window",
    "call_count_series",
    "choose_step",
    "epoch_seconds",
    "grouped_columns",
    "placed",
    "require_within_bounds",
    "target_call_series",
    "target_token_series",
    "token_series",
    "token_totals",
    "traffic_series",
]

MAX_BUCKETS = 500
# Calls that name a model and may carry tokens; the others (MCP tool calls, RAG retrievals) call another resource.
MODEL_CALL_KINDS = (
    CallKind.CHAT_COMPLETION,
    CallKind.RESPONSE,
    CallKind.EMBEDDING,
    CallKind.RERANK,
    CallKind.TRANSCRIPTION,
)
# The column naming what a call of each non-model kind called: the MCP server's or the RAG's name.
_TARGET_NAMED_KINDS = frozenset({CallKind.MCP_TOOL_CALL, CallKind.RAG_CONTEXT})
STEPS = (60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400)  # seconds: 1m 5m 15m 30m 1h 2h 6h 12h 1d
_ROLE = "can_manage_tenants"


class GroupBy(IntEnum):
    """Numbers match TokenUsageGroupBy and CallGroupBy (UNSPECIFIED means NONE)."""

    UNSPECIFIED = 0
    NONE = 1
    TENANT = 2
    MODEL = 3
    API_KEY = 4


_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def require_within_bounds(start: datetime, end: datetime, start_field: str, end_field: str) -> None:
    """Refuses a range outside the times usage reads accept. Their buckets are aligned outward (to the epoch, or to
    whole hours and days), so a range ending near datetime's last year (9999) would reach past it."""
    for name, inside in ((start_field, start >= _EARLIEST), (end_field, end <= _LATEST)):
        if not inside:
            raise InvalidArgument(f"{name} must lie between {_EARLIEST:%Y-%m-%d} and {_LATEST:%Y-%m-%d}", field=name)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    @staticmethod
    def of(start: datetime | None, end: datetime | None, field_name: str = "window") -> Window:
        if start is None or end is None:
            raise InvalidArgument(f"{field_name} needs a start_time and an end_time", field=field_name)
        require_within_bounds(start, end, field_name, field_name)
        if start >= end:
            raise InvalidArgument(f"{field_name}.start_time must be before its end_time", field=field_name)
        return Window(start.astimezone(UTC), end.astimezone(UTC))


@dataclass(frozen=True)
class Filters:
    tenant_ids: tuple[str, ...] = ()
    model_ids: tuple[str, ...] = ()  # resource ids, for call counts
    user_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("tenant_ids", "model_ids", "user_ids"):
            limit_ids(getattr(self, name), name)


@dataclass
class TokenTotals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    rerank_tokens: int = 0
    total_tokens: int = 0


@dataclass
class CallCounts:
    count: int = 0


@dataclass
class TrafficTotals:
    request_count: int = 0
    error_count: int = 0
    request_bytes: int = 0
    response_bytes: int = 0


@dataclass(frozen=True)
class Bucket:
    start: datetime
    end: datetime


T = TypeVar("T")


@dataclass
class Series(Generic[T]):
    """One group's points, one per bucket, in time order."""

    tenant_id: str = ""
    model_id: str = ""
    service: str = ""
    points: list[tuple[Bucket, T]] = field(default_factory=list)


def choose_step(window: Window, requested: timedelta | None) -> int:
    """The step (seconds) actually returned: the requested one rounded up to the ladder, then coarsened until the
    window holds at most MAX_BUCKETS buckets. No request means the finest step that keeps under the cap. A step
    longer than the window is kept, in whole days: the bucket holding the window is clipped to it (_buckets)."""
    if requested is not None and requested < timedelta(0):
        raise InvalidArgument("step must not be negative", field="step")
    wanted = requested.total_seconds() if requested else 0
    for step in STEPS:
        if step >= wanted and _bucket_count(window, step) <= MAX_BUCKETS:
            return step
    span = (window.end - window.start).total_seconds()
    days = max(1, -(-int(span) // (86400 * MAX_BUCKETS)), -(-int(wanted) // 86400))
    while _bucket_count(window, 86400 * days) > MAX_BUCKETS:  # one more day at most
        days += 1
    return 86400 * days


def _bucket_count(window: Window, step: int) -> int:
    """How many buckets _buckets gives: aligned to the epoch, a window not on a step's boundary touches one more
    bucket than its span holds (500 minutes from 00:00:30 touch 501 minutes)."""
    origin = int(window.start.timestamp()) // step * step
    return math.ceil((window.end.timestamp() - origin) / step)


def _group_of(group_by: int, field_name: str) -> GroupBy:
    try:
        group = GroupBy(group_by)
    except ValueError:
        raise InvalidArgument(f"{field_name} is not a known grouping", field=field_name) from None
    if group == GroupBy.API_KEY:
        raise InvalidArgument(
            f"{field_name} by API key is not available on platform reads: keys belong to a tenant", field=field_name
        )
    return GroupBy.NONE if group == GroupBy.UNSPECIFIED else group


def epoch_seconds(session: AsyncSession, column: Any) -> ColumnElement[int]:
    if session.get_bind().dialect.name == "sqlite":
        return cast(func.strftime("%s", column), Integer)  # SQLite keeps UTC times as text
    return cast(func.floor(extract("epoch", column)), BigInteger)


def _buckets(window: Window, step: int) -> tuple[int, list[Bucket]]:
    """(origin, buckets): epoch-aligned buckets covering the window, clipped to it."""
    origin = int(window.start.timestamp()) // step * step
    buckets = []
    start = origin
    end_ts = window.end.timestamp()
    while start < end_ts:
        b_start = max(datetime.fromtimestamp(start, UTC), window.start)
        # Clipped before it is a datetime: a long step's last bucket may end past year 9999.
        b_end = window.end if start + step >= end_ts else datetime.fromtimestamp(start + step, UTC)
        buckets.append(Bucket(b_start, b_end))
        start += step
    return origin, buckets


def _where(
    column: Any, window: Window, filters: Filters | None = None, resource: Any = UsageEventRow.model_id
) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [column >= window.start, column < window.end]
    if filters is not None:
        for values, target in (
            (filters.tenant_ids, UsageEventRow.tenant_id),
            (filters.model_ids, resource),
            (filters.user_ids, UsageEventRow.user_id),
        ):
            if values:
                conditions.append(target.in_(values))
    return conditions


def _model_calls(group: GroupBy) -> list[ColumnElement[bool]]:
    """Token reads see model calls only; grouped by model, only the calls that named one (a request refused before
    its model was read has none, and no tokens)."""
    conditions: list[ColumnElement[bool]] = [UsageEventRow.call_kind.in_([int(k) for k in MODEL_CALL_KINDS])]
    if group == GroupBy.MODEL:
        conditions.append(UsageEventRow.model_id != "")
    return conditions


def _resource_column(kind: int) -> Any:
    """What a call of this kind called: a model id, or the name of the MCP server or RAG."""
    return UsageEventRow.target_name if kind in _TARGET_NAMED_KINDS else UsageEventRow.model_id


def _group_columns(
    group: GroupBy, resource: Any = UsageEventRow.model_id
) -> tuple[ColumnElement[str], ColumnElement[str]]:
    empty: ColumnElement[str] = literal("")
    tenant = UsageEventRow.tenant_id if group == GroupBy.TENANT else empty
    model = resource if group == GroupBy.MODEL else empty
    return tenant, model  # type: ignore[return-value]


_TOKEN_SUMS = (
    func.sum(UsageEventRow.prompt_tokens),
    func.sum(UsageEventRow.completion_tokens),
    func.sum(UsageEventRow.embedding_tokens),
    func.sum(UsageEventRow.rerank_tokens),
    func.sum(UsageEventRow.total_tokens),
)


def _totals(values: Sequence[Any]) -> TokenTotals:
    return TokenTotals(*(int(v or 0) for v in values))


def placed(index: Sequence[int], figures: Iterable[Sequence[Any]], count: int) -> list[list[int]]:
    """Zero-filled columns of `count` buckets, one per figure: `figure[k]` lands in bucket `index[k]`."""
    columns = []
    for values in figures:
        column = [0] * count
        for i, value in zip(index, map(int, values), strict=True):  # PostgreSQL's sums arrive as Decimal
            column[i] = value
        columns.append(column)
    return columns


def grouped_columns(rows: Iterable[Sequence[Any]], count: int, *, keys: int) -> dict[tuple[Any, ...], list[list[int]]]:
    """Rows of (bucket index, `keys` group columns, figures...) as zero-filled columns per group (the tuple of its
    group columns): `columns[f][i]` is figure f of bucket i, 0 where no row said otherwise. Columns, not an object
    per point: a month of hours grouped by key is 720 x 11 points, and an object each cost half the read's time.
    Each group's rows are transposed at C speed (zip), then placed: a row at a time cost as much as the query."""
    key_of = itemgetter(*range(1, 1 + keys))
    found: dict[tuple[Any, ...], list[list[int]]] = {}
    for key, group in groupby(sorted(rows, key=key_of), key=key_of):
        index, *transposed = zip(*group, strict=True)
        found[key if keys > 1 else (key,)] = placed(index, transposed[keys:], count)
    return found


def _zero_filled(
    buckets: list[Bucket],
    found: dict[tuple[Any, ...], list[list[int]]],
    point: Callable[..., T],
    *,
    grouped: bool,
    service_key: bool = False,
) -> list[Series[T]]:
    if not grouped and not found:
        found = {("", ""): []}  # an ungrouped read always answers one series, zeros included
    out = []
    for key, columns in sorted(found.items()):
        points = [(bucket, point(*(column[i] for column in columns))) for i, bucket in enumerate(buckets)]
        if service_key:
            out.append(Series[T](service=key[0], points=points))
        else:
            out.append(Series[T](tenant_id=key[0], model_id=key[1], points=points))
    return out


@dataclass(frozen=True)
class UsageQuery:
    """What a read asks for; each read uses the fields it needs."""

    window: Window
    step: timedelta | None = None
    filters: Filters = Filters()
    group_by: int = 0
    kind: int = 0  # call counts: the one call kind
    limit: int = 0  # totals: rows, highest first; 0 means all
    service: str = ""  # traffic: one service, or all


async def token_series(
    session: AsyncSession, principal: Principal, query: UsageQuery
) -> tuple[int, list[Series[TokenTotals]]]:
    """(step returned, series): token totals per bucket, one series per tenant, per model, or one summed."""
    require_platform_scope(principal, _ROLE)
    group = _group_of(query.group_by, "group_by")
    seconds = choose_step(query.window, query.step)
    origin, buckets = _buckets(query.window, seconds)
    index = (epoch_seconds(session, UsageEventRow.occurred_at) - origin) // seconds
    tenant, model = _group_columns(group)
    stmt = (
        select(index, tenant, model, *_TOKEN_SUMS)
        .where(*_where(UsageEventRow.occurred_at, query.window, query.filters), *_model_calls(group))
        .group_by(index, tenant, model)
    )
    found = grouped_columns(await session.execute(stmt), len(buckets), keys=2)
    return seconds, _zero_filled(buckets, found, TokenTotals, grouped=group != GroupBy.NONE)


async def call_count_series(
    session: AsyncSession, principal: Principal, query: UsageQuery
) -> tuple[int, list[Series[CallCounts]]]:
    """(step returned, series): the number of metered calls of exactly one kind per bucket."""
    require_platform_scope(principal, _ROLE)
    if query.kind <= 0:
        raise InvalidArgument("kind must name one call kind", field="kind")
    group = _group_of(query.group_by, "group_by")
    seconds = choose_step(query.window, query.step)
    origin, buckets = _buckets(query.window, seconds)
    index = (epoch_seconds(session, UsageEventRow.occurred_at) - origin) // seconds
    resource = _resource_column(query.kind)
    tenant, model = _group_columns(group, resource)
    stmt = (
        select(index, tenant, model, func.count())
        .where(
            UsageEventRow.call_kind == query.kind,
            *_where(UsageEventRow.occurred_at, query.window, query.filters, resource),
        )
        .group_by(index, tenant, model)
    )
    found = grouped_columns(await session.execute(stmt), len(buckets), keys=2)
    return seconds, _zero_filled(buckets, found, CallCounts, grouped=group != GroupBy.NONE)


async def token_totals(
    session: AsyncSession, principal: Principal, query: UsageQuery
) -> list[tuple[str, str, TokenTotals]]:
    """(tenant id, model id, totals) per group over the whole window, highest total first; limit 0 means all."""
    require_platform_scope(principal, _ROLE)
    group = _group_of(query.group_by, "group_by")
    tenant, model = _group_columns(group)
    total = func.sum(UsageEventRow.total_tokens)
    stmt = (
        select(tenant, model, *_TOKEN_SUMS)
        .where(*_where(UsageEventRow.occurred_at, query.window, query.filters), *_model_calls(group))
        .group_by(tenant, model)
        .order_by(total.desc(), tenant, model)
    )
    if query.limit:
        stmt = stmt.limit(query.limit)
    rows: list[tuple[str, str, TokenTotals]] = [
        (row[0], row[1], _totals(row[2:])) for row in await session.execute(stmt)
    ]
    if not rows and group == GroupBy.NONE:
        rows = [("", "", TokenTotals())]
    return rows


async def traffic_series(
    session: AsyncSession, principal: Principal, query: UsageQuery
) -> tuple[int, list[Series[TrafficTotals]], list[str]]:
    """(step returned, one series per service, every service seen in the window whatever the filter)."""
    require_platform_scope(principal, _ROLE)
    seconds = choose_step(query.window, query.step)
    origin, buckets = _buckets(query.window, seconds)
    index = (epoch_seconds(session, ApiTrafficRow.occurred_at) - origin) // seconds
    # A row counts the requests of one service, status and second (server.metering)
    errors = func.sum(case((ApiTrafficRow.status >= 400, ApiTrafficRow.requests), else_=0))
    stmt = (
        select(
            index,
            ApiTrafficRow.service,
            func.sum(ApiTrafficRow.requests),
            errors,
            func.sum(ApiTrafficRow.request_bytes),
            func.sum(ApiTrafficRow.response_bytes),
        )
        .where(*_where(ApiTrafficRow.occurred_at, query.window))
        .group_by(index, ApiTrafficRow.service)
    )
    found = grouped_columns(await session.execute(stmt), len(buckets), keys=1)
    services = sorted(name for (name,) in found)
    if query.service:
        found = {k: v for k, v in found.items() if k[0] == query.service}
    return seconds, _zero_filled(buckets, found, TrafficTotals, grouped=True, service_key=True), services


def _target_buckets(session: AsyncSession, window: Window, step: timedelta | None) -> tuple[int, list[Bucket], Any]:
    """(step, buckets, bucket-index expression) for a per-target read. Steps stop at one day here (metrics steps
    name no coarser one), so a window touching more than MAX_BUCKETS UTC days is refused."""
    seconds = choose_step(window, step)
    if seconds > STEPS[-1]:
        raise InvalidArgument(f"start_time to end_time may span at most {MAX_BUCKETS} UTC days", field="start_time")
    origin, buckets = _buckets(window, seconds)
    return seconds, buckets, (epoch_seconds(session, UsageEventRow.occurred_at) - origin) // seconds


def _of_target(target: ResourceRef, window: Window) -> list[ColumnElement[bool]]:
    return [
        UsageEventRow.target_kind == int(target.kind),
        UsageEventRow.target_name == target.name,
        *_where(UsageEventRow.occurred_at, window),
    ]


async def target_token_series(
    session: AsyncSession, target: ResourceRef, window: Window, step: timedelta | None
) -> tuple[int, list[tuple[Bucket, TokenTotals]]]:
    """(step returned, points): token totals per bucket of the calls that reached one model target, directly or
    through an alias. The caller's rights on the target are the target's own module's to check."""
    seconds, buckets, index = _target_buckets(session, window, step)
    stmt = select(index, *_TOKEN_SUMS).where(*_of_target(target, window)).group_by(index)
    found = {int(row[0]): _totals(row[1:]) for row in await session.execute(stmt)}
    return seconds, [(bucket, found.get(i) or TokenTotals()) for i, bucket in enumerate(buckets)]


PERCENTILES = (0.5, 0.9, 0.99)


@dataclass
class CallStats:
    """One bucket of a target's calls. `latency_ms` maps each of PERCENTILES to a latency in milliseconds and is
    empty when the bucket had no calls (no latency is known; it is not zero)."""

    requests: int = 0
    errors_4xx: int = 0
    errors_5xx: int = 0
    latency_ms: dict[float, float] = field(default_factory=dict)
    tokens: TokenTotals = field(default_factory=TokenTotals)


def _count_where(condition: ColumnElement[bool]) -> ColumnElement[int]:
    return func.sum(case((condition, 1), else_=0))


async def target_call_series(
    session: AsyncSession, target: ResourceRef, window: Window, step: timedelta | None
) -> tuple[int, list[tuple[Bucket, CallStats]]]:
    """(step returned, points): requests, 4xx and 5xx responses, latency percentiles and tokens per bucket of the
    calls that reached one target. Two queries whatever the number of calls: counts and sums in one GROUP BY, and
    the percentiles (see `_latency_percentiles`). Every metered call counts, whatever its status: latency is what
    callers experienced."""
    seconds, buckets, index = _target_buckets(session, window, step)
    status = UsageEventRow.status
    stmt = (
        select(
            index,
            func.count(),
            _count_where(and_(status >= 400, status < 500)),
            _count_where(status >= 500),
            *_TOKEN_SUMS,
        )
        .where(*_of_target(target, window))
        .group_by(index)
    )
    found: dict[int, CallStats] = {}
    for row in await session.execute(stmt):
        found[int(row[0])] = CallStats(int(row[1]), int(row[2] or 0), int(row[3] or 0), tokens=_totals(row[4:]))
    for i, latencies in (await _latency_percentiles(session, index, _of_target(target, window))).items():
        if i in found:
            found[i].latency_ms = latencies
    return seconds, [(bucket, found.get(i) or CallStats()) for i, bucket in enumerate(buckets)]


async def _latency_percentiles(
    session: AsyncSession, index: Any, where: list[ColumnElement[bool]]
) -> dict[int, dict[float, float]]:
    """Per bucket, PERCENTILES of latency_ms with linear interpolation between the closest ranks (PostgreSQL's
    percentile_cont: rank p*(n-1) of the n latencies in ascending order).

    PostgreSQL computes them with percentile_cont in one GROUP BY. SQLite has no percentile aggregate: a window
    query ranks each bucket's latencies inside the database and returns only the two rows around each wanted rank
    (at most six rows per bucket), which are interpolated here the same way. Either way the database sorts the
    target's calls in the window once (O(n log n), n = calls of this target in the window, found through the
    (target_kind, target_name, occurred_at) index) and no per-call data crosses to Python."""
    latency = UsageEventRow.latency_ms
    if session.get_bind().dialect.name != "sqlite":
        cont = [func.percentile_cont(p).within_group(latency) for p in PERCENTILES]
        stmt = select(index, *cont).where(*where).group_by(index)
        return {
            int(row[0]): dict(zip(PERCENTILES, map(float, row[1:]), strict=True)) for row in await session.execute(stmt)
        }
    ranked = (
        select(
            index.label("bucket"),
            latency.label("latency"),
            (func.row_number().over(partition_by=index, order_by=latency) - 1).label("rank"),
            func.count().over(partition_by=index).label("n"),
        )
        .where(*where)
        .subquery()
    )
    near = [cast(p * (ranked.c.n - 1), Integer) + k for p in PERCENTILES for k in (0, 1)]
    stmt = select(ranked.c.bucket, ranked.c.n, ranked.c.rank, ranked.c.latency).where(ranked.c.rank.in_(near))
    by_bucket: dict[int, tuple[int, dict[int, float]]] = {}
    for bucket, n, rank, value in await session.execute(stmt):
        by_bucket.setdefault(int(bucket), (int(n), {}))[1][int(rank)] = float(value)
    return {bucket: _interpolated(n, ranks) for bucket, (n, ranks) in by_bucket.items()}


def _interpolated(n: int, ranks: dict[int, float]) -> dict[float, float]:
    out = {}
    for p in PERCENTILES:
        position = p * (n - 1)
        low = int(position)
        below = ranks[low]
        above = ranks.get(low + 1, below)
        out[p] = below + (above - below) * (position - low)
    return out
