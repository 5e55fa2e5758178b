"""The console's usage reads: tokens and requests over time and top groups, summed from rollup tables.

Why rollups: the console asks for a month of one tenant's usage at a time; summing a million raw `usage_events`
rows per chart costs seconds, while the rollups (kept by triggers in the writing transaction, migrations 0008 and
0009) hold one row per hour, UTC day (or calendar month) and group that had calls. Which rollup answers which read,
and which of its rows cover a range: server.domain._usage_sources; the ranking: server.domain._usage_ranking.
Series in hour buckets read hour rows, in day buckets day rows; top lists read the coarsest rows inside the range
and finer rows at its ragged ends, so a year costs about as much as a month.

Windows are aligned outward to whole buckets (UTC hours or days) and answered as aligned; series are zero-filled.
Grouped by model, key or tenant, a series answers the `limit` groups with the most tokens (then requests, then id)
and one `other` group summing every other call counted (other groups, and calls in no group: made without a key,
or naming no model), so a chart never draws a hundred thousand keys and its stack still adds up to the total.
Names come back with ids, looked up in one statement per kind of name (no N+1 from the browser).

Who may read what is `server.permissions.usage`; this module counts within the reach it is given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain._usage_ranking import ranked
from server.domain._usage_sources import (
    DAY,
    HOUR,
    GroupBy,
    Source,
    Totals,
    UsageFilter,
    group_column,
    planned,
    totals_of,
)
from server.domain.usage import grouped_columns, placed, require_within_bounds
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

_MAX_BUCKETS = {HOUR: 31 * 24, DAY: 732}
_MAX_SERIES_LIMIT = 50
_MAX_TOP_LIMIT = 100
_DEFAULT_LIMIT = 10


@dataclass(frozen=True)
class UsageRequest:
    start: datetime
    end: datetime
    grain: int = HOUR  # the series' bucket width in seconds: HOUR or DAY
    group_by: int = 0
    limit: int = 0
    filter: UsageFilter = field(default_factory=UsageFilter)


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
    """One group's points column-wise (server.domain.usage.grouped_columns): `columns[f][i]` is figure f (Totals'
    field order: requests, errors, input, output, total tokens) of bucket i."""

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


def _aligned(start: datetime, end: datetime, grain: int, *, most_seconds: int) -> tuple[int, int]:
    """[first, last) in epoch seconds: the range widened to whole buckets of `grain`."""
    if start >= end:
        raise InvalidArgument("start_time must be before end_time", field="start_time")
    require_within_bounds(start, end, "start_time", "end_time")  # aligned outward, the end of 9999 is year 10000
    first = int(start.timestamp()) // grain * grain
    last = math.ceil(end.timestamp() / grain) * grain  # a fraction of a second past a bucket's start is in it
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
    session: AsyncSession,
    reach: UsageReach,
    planned_read: tuple[Source, list[ColumnElement[bool]]],
    span: _Range,
    group: GroupBy,
) -> dict[Any, list[list[int]]]:
    """Zero-filled columns per group. Where each group's bucket is one rollup row, the rows are read as they are:
    summing 7,200 one-row groups (a month of hours of ten keys) cost PostgreSQL several times reading them; and
    PostgreSQL hands them over as one row of arrays per group, which costs this process a fraction of 7,200 rows.
    Core statements (session.connection()): the ORM's result path cost as much again, for rows it does not map."""
    source, where = planned_read
    column = group_column(source, group)
    index = (source.bucket(session, span.grain) - span.first) // span.grain
    where = [*where, source.between(span.grain, span.first, span.last)]
    connection = await session.connection()
    if not source.one_row_each(group, tenant_fixed=reach.tenant_id is not None):
        stmt = select(index, column, *source.sums).where(*where).group_by(index, column)
    elif connection.dialect.name == "postgresql":
        # Every aggregate of a group is fed its rows in the same order, so the arrays line up.
        arrays = select(column, *(func.array_agg(value) for value in (index, *source.values))).where(*where)
        found = await connection.execute(arrays.group_by(column))
        return {row[0]: placed(row[1], row[2:], span.count) for row in found}
    else:
        stmt = select(index, column, *source.values).where(*where)
    grouped = grouped_columns(await connection.execute(stmt), span.count, keys=1)
    return {key[0]: columns for key, columns in grouped.items()}


async def _top_series(
    session: AsyncSession, reach: UsageReach, request: UsageRequest, group: GroupBy, span: _Range
) -> list[Series]:
    limit = _limit(request.limit, _MAX_SERIES_LIMIT)
    source, where = planned(reach, request.filter, group)
    winners = await ranked(session, source, where, group=group, limit=limit, span=(span.first, span.last))
    tops = [value for value, _ in winners]
    if not tops:
        return []
    column = group_column(source, group)
    found = await _points(session, reach, (source, [*where, column.in_(tops)]), span, group)
    names = await _names(session, group, tops)
    return [Series(_group(group, value, names), found.get(value) or span.zeros()) for value in tops]


async def usage_series(session: AsyncSession, reach: UsageReach, request: UsageRequest) -> SeriesAnswer:
    """Grouped by model, key or tenant, three statements and the ranking's (server.domain._usage_ranking): the
    ranking, the top groups' points (found by the groups' ids), and the points of everything counted, from the
    cheapest rollup; `other` is everything minus the top groups. Ungrouped or by kind, one statement."""
    group = _group_of(request.group_by, series=True)
    grain = request.grain
    if grain not in _MAX_BUCKETS:
        raise InvalidArgument("bucket is not a known bucket width", field="bucket")
    span = _Range(*_aligned(request.start, request.end, grain, most_seconds=grain * _MAX_BUCKETS[grain]), grain)
    everything = planned(reach, request.filter, GroupBy.NONE)
    whole = Series(Group(), (await _points(session, reach, everything, span, GroupBy.NONE)).get("") or span.zeros())
    if group == GroupBy.NONE:
        series = [whole]
    elif group == GroupBy.CALL_KIND:
        found = await _points(session, reach, planned(reach, request.filter, group), span, group)
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
    source, where = planned(reach, request.filter, group)
    winners = await ranked(session, source, where, group=group, limit=limit, span=(first, last))
    names = await _names(session, group, [value for value, _ in winners])
    everything, every = planned(reach, request.filter, GroupBy.NONE)
    totals = totals_of(
        (await session.execute(select(*everything.sums).where(*every, everything.span(first, last)))).one()
    )
    return TopAnswer(
        start=datetime.fromtimestamp(first, UTC),
        end=datetime.fromtimestamp(last, UTC),
        ranks=[Rank(_group(group, value, names), sums) for value, sums in winners],
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
