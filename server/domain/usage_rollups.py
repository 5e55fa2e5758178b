"""The console's usage reads: tokens and requests over time and top groups, summed from rollup tables.

Why rollups: the console asks for a month of one tenant's usage at a time; summing a million raw `usage_events`
rows per chart costs seconds, while the rollups (kept by triggers in the writing transaction, migration 0006) hold
one row per hour or UTC day and group that had calls:

- `usage_tenant_rollups` per tenant alone: ungrouped series, and the whole a grouped series' `other` comes from;
- `usage_model_rollups` per tenant, call kind and model: totals, per model, per kind, per tenant, filtered by model
  or kind (a month of a tenant is a few thousand day rows);
- `usage_key_rollups` per tenant, API key, calling user and call kind: per key, a member's own calls, filtered by key
  or kind.

A read takes the first of them holding every column it groups or filters on; the few reads that need a key (or a
user) and a model together (say, one member's calls per model) sum the raw rows, on the same indexes the platform
usage reads use. Series in hour buckets read hour rows, in day buckets day rows; top lists read the day rows of
the whole days inside the range and the hour rows of its ragged ends, so a year costs about as much as a month.

Windows are aligned outward to whole buckets (UTC hours or days) and answered as aligned; series are zero-filled.
Grouped by model, key or tenant, a series answers the `limit` groups with the most tokens (then requests, then id)
and one `other` group summing every other call counted (other groups, and calls in no group: made without a key,
or naming no model), so a chart never draws a hundred thousand keys and its stack still adds up to the total.
Names come back with ids, looked up in one statement per kind of name (no N+1 from the browser).

Who may read what is `server.permissions.usage`; this module counts within the reach it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, literal, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.usage import MODEL_CALL_KINDS, epoch_seconds
from server.errors import InvalidArgument
from server.metering import CallKind
from server.permissions import UsageReach
from server.store.models import (
    ApiKeyRow,
    ExternalModelRow,
    ModelAliasRow,
    ModelDeploymentRow,
    PresetAgentRow,
    TenantRow,
    UsageEventRow,
    UsageKeyRollupRow,
    UsageModelRollupRow,
    UsageTenantRollupRow,
)

__all__ = [
    "DAY",
    "HOUR",
    "Group",
    "GroupBy",
    "Rank",
    "Series",
    "SeriesAnswer",
    "TopAnswer",
    "Totals",
    "UsageFilter",
    "UsageRequest",
    "top_usage",
    "usage_series",
]

HOUR = 3600
DAY = 86400
_MAX_BUCKETS = {HOUR: 31 * 24, DAY: 732}
_MAX_SERIES_LIMIT = 50
_MAX_TOP_LIMIT = 100
_DEFAULT_LIMIT = 10


class GroupBy(IntEnum):
    """Numbers match switchboard.usage.v1.GroupBy."""

    UNSPECIFIED = 0
    NONE = 1
    MODEL = 2
    API_KEY = 3
    CALL_KIND = 4
    TENANT = 5


@dataclass(frozen=True)
class UsageFilter:
    model_ids: tuple[str, ...] = ()
    api_key_ids: tuple[str, ...] = ()
    call_kinds: tuple[int, ...] = ()


@dataclass(frozen=True)
class UsageRequest:
    start: datetime
    end: datetime
    grain: int = HOUR  # the series' bucket width in seconds: HOUR or DAY
    group_by: int = 0
    limit: int = 0
    filter: UsageFilter = UsageFilter()


@dataclass
class Totals:
    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


@dataclass
class Group:
    id: str = ""
    display_name: str = ""
    other: bool = False
    tenant_id: str = ""


# The five figures of Totals, in its field order.
_FIGURES = 5


@dataclass
class Series:
    """One group's points column-wise: `columns[f][i]` is figure f (Totals' field order: requests, errors, input,
    output, total tokens) of bucket i. Columns, not an object per point: a month of hours grouped by key is
    720 x 11 points, and an object each cost about half the read's time."""

    group: Group
    columns: list[list[int]]
    totals: Totals = field(default_factory=Totals)

    def summed(self) -> Series:
        self.totals = Totals(*(sum(column) for column in self.columns))
        return self


@dataclass
class SeriesAnswer:
    start: datetime
    end: datetime
    grain: int
    bucket_starts: list[datetime]
    series: list[Series]
    totals: Totals


@dataclass
class Rank:
    group: Group
    totals: Totals


@dataclass
class TopAnswer:
    start: datetime
    end: datetime
    ranks: list[Rank]
    totals: Totals


def _totals(values: Sequence[Any]) -> Totals:
    return Totals(*(int(v or 0) for v in values))


def _epoch(value: datetime) -> int:
    return int(value.astimezone(UTC).timestamp())


class _Source:
    """A table a read sums: a rollup (whose rows carry requests and errors) or the raw rows (one row per call)."""

    def __init__(self, table: Any, dimensions: frozenset[str], *, raw: bool = False) -> None:
        self.table = table
        self.dimensions = dimensions
        self.raw = raw
        t = table
        requests = func.count() if raw else func.sum(t.requests)
        errors = func.sum(case((t.status >= 400, 1), else_=0)) if raw else func.sum(t.errors)
        # Input tokens are what was sent to a model: a prompt, texts to embed, a query and documents to rerank.
        self.sums: tuple[ColumnElement[Any], ...] = (
            requests,
            errors,
            func.sum(t.prompt_tokens + t.embedding_tokens + t.rerank_tokens),
            func.sum(t.completion_tokens),
            func.sum(t.total_tokens),
        )
        self.tokens = self.sums[4]
        self.requests = requests

    def column(self, name: str) -> Any:
        return getattr(self.table, name)

    def bucket(self, session: AsyncSession, grain: int) -> Any:
        if not self.raw:
            return self.table.bucket
        return epoch_seconds(session, self.table.occurred_at) // grain * grain

    def between(self, grain: int, first: int, last: int) -> ColumnElement[bool]:
        """The rows of [first, last) in rows of `grain` (raw rows: by their time)."""
        if self.raw:
            at = self.table.occurred_at
            return and_(at >= datetime.fromtimestamp(first, UTC), at < datetime.fromtimestamp(last, UTC))
        t = self.table
        return and_(t.grain == grain, t.bucket >= first, t.bucket < last)

    def span(self, first: int, last: int) -> ColumnElement[bool]:
        """Rows covering [first, last) exactly once: day rows for the whole days, hour rows for the ragged ends."""
        day_first = -(-first // DAY) * DAY
        day_last = last // DAY * DAY
        if self.raw or day_first >= day_last:
            return self.between(HOUR, first, last)
        parts = [self.between(DAY, day_first, day_last)]
        if first < day_first:
            parts.append(self.between(HOUR, first, day_first))
        if day_last < last:
            parts.append(self.between(HOUR, day_last, last))
        return or_(*parts)


_SOURCES = (
    _Source(UsageTenantRollupRow, frozenset()),
    _Source(UsageModelRollupRow, frozenset({"call_kind", "model_id"})),
    _Source(UsageKeyRollupRow, frozenset({"api_key_id", "user_id", "call_kind"})),
    _Source(UsageEventRow, frozenset({"call_kind", "model_id", "api_key_id", "user_id"}), raw=True),
)
_GROUP_COLUMNS = {
    GroupBy.MODEL: "model_id",
    GroupBy.API_KEY: "api_key_id",
    GroupBy.TENANT: "tenant_id",
    GroupBy.CALL_KIND: "call_kind",
}


def _aligned(start: datetime, end: datetime, grain: int, *, most_seconds: int) -> tuple[int, int]:
    """[first, last) in epoch seconds: the range widened to whole buckets of `grain`."""
    if start >= end:
        raise InvalidArgument("start_time must be before end_time", field="start_time")
    first = _epoch(start) // grain * grain
    last = -(-_epoch(end) // grain) * grain
    if last - first > most_seconds:
        what = "31 days in hour buckets" if most_seconds < DAY * _MAX_BUCKETS[DAY] else f"{_MAX_BUCKETS[DAY]} days"
        raise InvalidArgument(f"start_time to end_time may span at most {what}", field="end_time")
    return first, last


def _group_of(value: int, *, series: bool) -> GroupBy:
    try:
        group = GroupBy(value)
    except ValueError:
        raise InvalidArgument("group_by is not a known grouping", field="group_by") from None
    if group == GroupBy.UNSPECIFIED:
        if not series:
            raise InvalidArgument("group_by is required", field="group_by")
        return GroupBy.NONE
    if group == GroupBy.NONE and not series:
        raise InvalidArgument("a top list needs a grouping", field="group_by")
    return group


def _limit(value: int, most: int) -> int:
    if value < 0 or value > most:
        raise InvalidArgument(f"limit must be between 1 and {most} (0 means {_DEFAULT_LIMIT})", field="limit")
    return value or _DEFAULT_LIMIT


def _conditions(reach: UsageReach, wanted: UsageFilter, group: GroupBy) -> list[tuple[str, str, Any]]:
    """(column, operator, value) of what a read counts, whatever table it reads."""
    where: list[tuple[str, str, Any]] = []
    if reach.tenant_id is not None:
        where.append(("tenant_id", "==", reach.tenant_id))
    if reach.user_id is not None:
        where.append(("user_id", "==", reach.user_id))
    if wanted.model_ids:
        where.append(("model_id", "in", wanted.model_ids))
    if wanted.api_key_ids:
        where.append(("api_key_id", "in", wanted.api_key_ids))
    if wanted.call_kinds:
        if not set(wanted.call_kinds) <= {int(k) for k in CallKind}:
            raise InvalidArgument("filter.call_kinds holds an unknown call kind", field="filter.call_kinds")
        where.append(("call_kind", "in", sorted(set(wanted.call_kinds))))
    if group == GroupBy.MODEL:
        # MCP tool calls and RAG retrievals name no model, and a call refused before its model was read has none.
        where.append(("call_kind", "in", [int(k) for k in MODEL_CALL_KINDS]))
        where.append(("model_id", "!=", ""))
    # A group's id is never empty: the empty value names `other` in a series. Calls made with a session have no
    # key, and calls outside any tenant no tenant; grouped by those, they are left out.
    if group == GroupBy.API_KEY:
        where.append(("api_key_id", "!=", ""))
    if group == GroupBy.TENANT:
        where.append(("tenant_id", "!=", ""))
    return where


def _planned(reach: UsageReach, wanted: UsageFilter, group: GroupBy) -> tuple[_Source, list[ColumnElement[bool]]]:
    """The first source holding every column the read needs, and the read's conditions on it."""
    conditions = _conditions(reach, wanted, group)
    needed = {name for name, _, _ in conditions} | ({_GROUP_COLUMNS[group]} if group in _GROUP_COLUMNS else set())
    needed.discard("tenant_id")
    source = next(s for s in _SOURCES if needed <= s.dimensions)
    where: list[ColumnElement[bool]] = []
    for name, op, value in conditions:
        column = source.column(name)
        where.append(column == value if op == "==" else column != value if op == "!=" else column.in_(value))
    return source, where


def _group_column(source: _Source, group: GroupBy) -> Any:
    name = _GROUP_COLUMNS.get(group)
    return source.column(name) if name else literal("")


async def _ranked(
    session: AsyncSession, source: _Source, where: list[ColumnElement[bool]], group: GroupBy, limit: int
) -> list[tuple[Any, Totals]]:
    """The `limit` groups with the most tokens, then requests, then id, with their totals. Two statements: the
    ranking sums only what it orders by (grouped by key it aggregates every active key of the range, so each
    column summed costs), then the full totals of the winners alone, found by id."""
    column = _group_column(source, group)
    ranking = (
        select(column)
        .where(*where)
        .group_by(column)
        .order_by(source.tokens.desc(), source.requests.desc(), column)
        .limit(limit)
    )
    winners = list((await session.scalars(ranking)).all())
    if not winners:
        return []
    stmt = select(column, *source.sums).where(*where, column.in_(winners)).group_by(column)
    found = {row[0]: _totals(row[1:]) for row in await session.execute(stmt)}
    return [(value, found[value]) for value in winners]


@dataclass(frozen=True)
class _Range:
    first: int
    last: int
    grain: int

    @property
    def count(self) -> int:
        return (self.last - self.first) // self.grain

    def zeros(self) -> list[list[int]]:
        return [[0] * self.count for _ in range(_FIGURES)]


async def _points(
    session: AsyncSession, source: _Source, where: list[ColumnElement[bool]], span: _Range, column: Any
) -> dict[Any, list[list[int]]]:
    """Zero-filled columns per value of `column`."""
    bucket = source.bucket(session, span.grain)
    in_range = [*where, source.between(span.grain, span.first, span.last)]
    stmt = select(bucket, column, *source.sums).where(*in_range).group_by(bucket, column)
    found: dict[Any, list[list[int]]] = {}
    first, grain = span.first, span.grain
    for row in await session.execute(stmt):
        columns = found.get(row[1])
        if columns is None:
            columns = found[row[1]] = span.zeros()
        i = (int(row[0]) - first) // grain
        for f in range(_FIGURES):
            columns[f][i] = int(row[2 + f] or 0)
    return found


async def _top_series(
    session: AsyncSession, reach: UsageReach, request: UsageRequest, group: GroupBy, span: _Range
) -> list[Series]:
    limit = _limit(request.limit, _MAX_SERIES_LIMIT)
    source, where = _planned(reach, request.filter, group)
    ranked = await _ranked(session, source, [*where, source.span(span.first, span.last)], group, limit)
    tops = [value for value, _ in ranked]
    if not tops:
        return []
    column = _group_column(source, group)
    found = await _points(session, source, [*where, column.in_(tops)], span, column)
    names = await _names(session, group, tops)
    return [Series(_group(group, value, names), found.get(value) or span.zeros()) for value in tops]


async def usage_series(session: AsyncSession, reach: UsageReach, request: UsageRequest) -> SeriesAnswer:
    """Grouped by model, key or tenant, three statements: the ranking (the range's day rows and ragged-end hour
    rows), the top groups' points (found by the groups' ids), and the points of everything counted, from the
    cheapest rollup; `other` is everything minus the top groups. Ungrouped or by kind, one statement."""
    group = _group_of(request.group_by, series=True)
    grain = request.grain
    if grain not in _MAX_BUCKETS:
        raise InvalidArgument("bucket is not a known bucket width", field="bucket")
    span = _Range(*_aligned(request.start, request.end, grain, most_seconds=grain * _MAX_BUCKETS[grain]), grain)
    everything, where = _planned(reach, request.filter, GroupBy.NONE)
    whole = Series(Group(), (await _points(session, everything, where, span, literal(""))).get("") or span.zeros())
    if group == GroupBy.NONE:
        series = [whole]
    elif group == GroupBy.CALL_KIND:
        kinds, by_kind = _planned(reach, request.filter, group)
        found = await _points(session, kinds, by_kind, span, _group_column(kinds, group))
        series = [Series(_group(group, value, {}), columns) for value, columns in found.items()]
    else:
        series = await _top_series(session, reach, request, group, span)
        rest = [
            [
                total - sum(parts)
                for total, *parts in zip(whole.columns[f], *(s.columns[f] for s in series), strict=True)
            ]
            for f in range(_FIGURES)
        ]
        if any(rest[0]):  # requests
            series.append(Series(Group(other=True), rest))
    series = [one.summed() for one in series]
    if group == GroupBy.CALL_KIND:
        series.sort(key=lambda s: (-s.totals.total_tokens, -s.totals.requests, s.group.id))
    return SeriesAnswer(
        start=datetime.fromtimestamp(span.first, UTC),
        end=datetime.fromtimestamp(span.last, UTC),
        grain=grain,
        bucket_starts=[datetime.fromtimestamp(span.first + i * grain, UTC) for i in range(span.count)],
        series=series,
        totals=whole.summed().totals,
    )


async def top_usage(session: AsyncSession, reach: UsageReach, request: UsageRequest) -> TopAnswer:
    """Two statements: the ranking, and the totals of everything counted (from the cheapest rollup)."""
    group = _group_of(request.group_by, series=False)
    limit = _limit(request.limit, _MAX_TOP_LIMIT)
    first, last = _aligned(request.start, request.end, HOUR, most_seconds=DAY * _MAX_BUCKETS[DAY])
    source, where = _planned(reach, request.filter, group)
    ranked = await _ranked(session, source, [*where, source.span(first, last)], group, limit)
    names = await _names(session, group, [value for value, _ in ranked])
    everything, every = _planned(reach, request.filter, GroupBy.NONE)
    totals = _totals(
        (await session.execute(select(*everything.sums).where(*every, everything.span(first, last)))).one()
    )
    return TopAnswer(
        start=datetime.fromtimestamp(first, UTC),
        end=datetime.fromtimestamp(last, UTC),
        ranks=[Rank(_group(group, value, names), sums) for value, sums in ranked],
        totals=totals,
    )


def _group(group: GroupBy, value: Any, names: dict[str, tuple[str, str]]) -> Group:
    if group == GroupBy.NONE:
        return Group()
    if group == GroupBy.CALL_KIND:
        kind = int(value)
        return Group(id=CallKind(kind).name.lower() if kind in CallKind._value2member_map_ else str(kind))
    name, tenant = names.get(str(value), ("", ""))
    return Group(id=str(value), display_name=name, tenant_id=tenant)


async def _names(session: AsyncSession, group: GroupBy, ids: Iterable[Any]) -> dict[str, tuple[str, str]]:
    """id -> (display name, tenant id) for the ids shown, in one statement."""
    wanted = sorted({str(v) for v in ids})
    if not wanted:
        return {}
    if group == GroupBy.API_KEY:
        rows = await session.execute(
            select(ApiKeyRow.id, ApiKeyRow.name, ApiKeyRow.prefix, ApiKeyRow.tenant_id).where(ApiKeyRow.id.in_(wanted))
        )
        return {r.id: (f"{r.name} ({r.prefix})" if r.name else r.prefix, r.tenant_id) for r in rows}
    if group == GroupBy.TENANT:
        rows = await session.execute(
            select(TenantRow.id, TenantRow.name, TenantRow.display_name).where(TenantRow.id.in_(wanted))
        )
        return {r.id: (r.display_name or r.name, r.id) for r in rows}
    if group == GroupBy.MODEL:
        # A public model id names exactly one of these (public_model_ids keeps them unique).
        named = union_all(
            *(
                select(table.public_model_id, table.display_name).where(table.public_model_id.in_(wanted))
                for table in (ModelDeploymentRow, ExternalModelRow, ModelAliasRow, PresetAgentRow)
            )
        )
        return {row[0]: (row[1] or row[0], "") for row in await session.execute(named)}
    return {}
