"""What a console usage read sums (server.domain.usage_rollups): the rollup tables, which of them answers a read, and
which of their rows cover a range exactly once.

The rollups (kept by triggers in the writing transaction, migrations 0008 and 0009), cheapest first:

- `usage_tenant_rollups` per tenant alone: ungrouped series, and the whole a grouped series' `other` comes from;
- `usage_model_call_rollups` per tenant and model, of the calls grouped by model only (model calls naming a model);
- `usage_model_rollups` per tenant, call kind and model: per kind, or by model filtered by kind;
- `usage_api_key_rollups` per tenant and API key alone, with calendar-month rows indexed by tokens (the ranking's);
- `usage_key_rollups` per tenant, API key, calling user and call kind: a member's own calls, filtered by kind.

A read takes the first of them holding every column it groups or filters on; the few reads that need a key (or a
user) and a model together (say, one member's calls per model) sum the raw rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, literal, or_
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.usage import MODEL_CALL_KINDS, epoch_seconds
from server.domain.validation import limit_ids
from server.errors import InvalidArgument
from server.metering import CallKind
from server.permissions import UsageReach
from server.store.models import (
    USAGE_MONTH_GRAIN,
    UsageApiKeyRollupRow,
    UsageEventRow,
    UsageKeyRollupRow,
    UsageModelCallRollupRow,
    UsageModelRollupRow,
    UsageTenantRollupRow,
)

__all__ = [
    "DAY",
    "HOUR",
    "MONTH",
    "GroupBy",
    "Source",
    "Totals",
    "UsageFilter",
    "group_column",
    "months_of",
    "planned",
    "totals_of",
]

HOUR = 3600
DAY = 86400
MONTH = USAGE_MONTH_GRAIN


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

    def __post_init__(self) -> None:
        for name in ("model_ids", "api_key_ids", "call_kinds"):
            limit_ids(getattr(self, name), f"filter.{name}")


@dataclass
class Totals:
    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


def totals_of(values: Sequence[Any]) -> Totals:
    """Totals of a row of Source.sums (NULL when nothing was summed)."""
    return Totals(*(int(v or 0) for v in values))


# (column, operator, value): one condition of a read, whatever table it reads.
Condition = tuple[str, str, Any]
# Grouped by model, a read counts the model calls that named a model (MCP tool calls and RAG retrievals name no
# model, and a call refused before its model was read has none).
_MODEL_CALLS: tuple[Condition, ...] = (
    ("call_kind", "in", tuple(int(k) for k in MODEL_CALL_KINDS)),
    ("model_id", "!=", ""),
)


def _month_start(at: int) -> int:
    """The first second of the UTC calendar month holding epoch second `at`."""
    day = datetime.fromtimestamp(at, UTC)
    return int(datetime(day.year, day.month, 1, tzinfo=UTC).timestamp())


def _next_month(at: int) -> int:
    day = datetime.fromtimestamp(at, UTC)
    year, month = divmod(day.year * 12 + day.month, 12)  # month is 0-based here: the next month's index
    return int(datetime(year, month + 1, 1, tzinfo=UTC).timestamp())


def _floor(grain: int, at: int) -> int:
    return _month_start(at) if grain == MONTH else at // grain * grain


def _ceil(grain: int, at: int) -> int:
    floor = _floor(grain, at)
    if floor == at:
        return at
    return _next_month(at) if grain == MONTH else floor + grain


def _pieces(first: int, last: int, grains: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """[first, last) (whole hours) as (grain, from, to): the coarsest grain's rows where they are whole, the next
    grains' rows for the edges. A year costs about what a month does."""
    coarse, *finer = grains
    if not finer:
        return [(coarse, first, last)]
    inner_first, inner_last = _ceil(coarse, first), _floor(coarse, last)
    if inner_first >= inner_last:
        return _pieces(first, last, tuple(finer))
    before = _pieces(first, inner_first, tuple(finer)) if first < inner_first else []
    after = _pieces(inner_last, last, tuple(finer)) if inner_last < last else []
    return [*before, (coarse, inner_first, inner_last), *after]


def months_of(first: int, last: int) -> list[int]:
    """The first seconds of the calendar months [first, last) touches."""
    months = [_month_start(first)]
    while (following := _next_month(months[-1])) < last:
        months.append(following)
    return months


class Source:
    """A table a read sums: a rollup (whose rows carry requests and errors) or the raw rows (one row per call)."""

    def __init__(
        self,
        table: Any,
        dimensions: frozenset[str],
        *,
        grains: tuple[int, ...] = (DAY, HOUR),
        counts_only: tuple[Condition, ...] = (),
        raw: bool = False,
    ) -> None:
        self.table = table
        self.dimensions = dimensions
        self.grains = grains
        self.counts_only = counts_only  # the conditions every row it counts meets (it holds no other rows)
        self.raw = raw
        t = table
        requests = func.count() if raw else func.sum(t.requests)
        errors = func.sum(case((t.status >= 400, 1), else_=0)) if raw else func.sum(t.errors)
        # Input tokens are what was sent to a model: a prompt, texts to embed, a query and documents to rerank.
        inputs = t.prompt_tokens + t.embedding_tokens + t.rerank_tokens
        self.sums: tuple[ColumnElement[Any], ...] = (
            requests,
            errors,
            func.sum(inputs),
            func.sum(t.completion_tokens),
            func.sum(t.total_tokens),
        )
        self.tokens = self.sums[4]
        self.requests = requests
        # A rollup row's own figures, in the order of `sums`.
        self.values: tuple[ColumnElement[Any], ...] = (
            () if raw else (t.requests, t.errors, inputs, t.completion_tokens, t.total_tokens)
        )

    def one_row_each(self, group: GroupBy, *, tenant_fixed: bool) -> bool:
        """Whether a bucket of each group of `group` is one row of this rollup: its rows are one per tenant, grain,
        bucket and value of its dimensions, so when the grouping (with the tenant) names all of those."""
        grouped = {_GROUP_COLUMNS[group]} if group in _GROUP_COLUMNS else set()
        return not self.raw and self.dimensions | {"tenant_id"} <= grouped | ({"tenant_id"} if tenant_fixed else set())

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
        """Rows covering [first, last) exactly once, the coarsest that fit (months, days, hours at the edges)."""
        if self.raw:
            return self.between(HOUR, first, last)
        return or_(*(self.between(grain, a, b) for grain, a, b in _pieces(first, last, self.grains)))


_SOURCES = (
    Source(UsageTenantRollupRow, frozenset()),
    Source(UsageModelCallRollupRow, frozenset({"model_id"}), counts_only=_MODEL_CALLS),
    Source(UsageModelRollupRow, frozenset({"call_kind", "model_id"})),
    Source(UsageApiKeyRollupRow, frozenset({"api_key_id"}), grains=(MONTH, DAY, HOUR)),
    Source(UsageKeyRollupRow, frozenset({"api_key_id", "user_id", "call_kind"})),
    Source(UsageEventRow, frozenset({"call_kind", "model_id", "api_key_id", "user_id"}), raw=True),
)
_GROUP_COLUMNS = {
    GroupBy.MODEL: "model_id",
    GroupBy.API_KEY: "api_key_id",
    GroupBy.TENANT: "tenant_id",
    GroupBy.CALL_KIND: "call_kind",
}


def _conditions(reach: UsageReach, wanted: UsageFilter, group: GroupBy) -> list[Condition]:
    where: list[Condition] = []
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
        where.append(("call_kind", "in", tuple(sorted(set(wanted.call_kinds)))))
    if group == GroupBy.MODEL:
        where.extend(_MODEL_CALLS)
    # A group's id is never empty: the empty value names `other` in a series. Calls made with a session have no
    # key, and calls outside any tenant no tenant; grouped by those, they are left out.
    if group == GroupBy.API_KEY:
        where.append(("api_key_id", "!=", ""))
    if group == GroupBy.TENANT:
        where.append(("tenant_id", "!=", ""))
    return where


def planned(reach: UsageReach, wanted: UsageFilter, group: GroupBy) -> tuple[Source, list[ColumnElement[bool]]]:
    """The first source holding every column the read needs, and the read's conditions on it."""
    conditions = _conditions(reach, wanted, group)
    grouped = {_GROUP_COLUMNS[group]} if group in _GROUP_COLUMNS else set()
    for source in _SOURCES:
        if not set(source.counts_only) <= set(conditions):
            continue
        rest = [c for c in conditions if c not in source.counts_only]
        if ({name for name, _, _ in rest} | grouped) - {"tenant_id"} <= source.dimensions:
            break
    where: list[ColumnElement[bool]] = []
    for name, op, value in rest:
        column = source.column(name)
        where.append(column == value if op == "==" else column != value if op == "!=" else column.in_(value))
    return source, where


def group_column(source: Source, group: GroupBy) -> Any:
    name = _GROUP_COLUMNS.get(group)
    return source.column(name) if name else literal("")
