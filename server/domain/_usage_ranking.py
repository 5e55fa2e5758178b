"""The groups with the most tokens (then requests, then id) in a range, for server.domain.usage_rollups.

Grouped by API key, summing every key that called in a month is what costs (a tenant's ~64,600 active keys of
100,000, ~200,000 day rows). The ranking first reads the heaviest keys of each calendar month the range touches,
from the month rows of `usage_api_key_rollups` (indexed by tokens), and sums those candidates exactly over the
range. It is a threshold algorithm: a key not read has at most the tokens of the last key read in each month, so
once the last winner's exact sum is above the sum of those, no unread key can rank among the winners. When that
does not happen with a few hundred candidates a month (tokens spread evenly, or calls without tokens), every key of
the range is summed, as every other grouping is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import ColumnElement, literal, literal_column, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain._usage_sources import MONTH, GroupBy, Source, Totals, group_column, months_of, totals_of

__all__ = ["ranked"]

# Candidates read per month, in multiples of the winners wanted: most rankings end with the first depth.
_DEPTHS = (4, 32)


async def ranked(
    session: AsyncSession,
    source: Source,
    where: list[ColumnElement[bool]],
    *,
    group: GroupBy,
    limit: int,
    span: tuple[int, int],
) -> list[tuple[Any, Totals]]:
    """The `limit` groups with the most tokens, then requests, then id, in [first, last), with their totals."""
    column = group_column(source, group)
    # The threshold holds only where each group has one month row (an API key's own rollup grouped by key): grouped
    # by tenant, say, a tenant's many keys each stay under the last row read while their sum does not.
    if MONTH in source.grains and group is GroupBy.API_KEY:
        for depth in _DEPTHS:
            found = await _by_threshold(
                session, source, where, column=column, limit=limit, span=span, depth=depth * limit
            )
            if found is not None:
                return found
    return await _scanned(session, source, [*where, source.span(*span)], column, limit)


async def _summed(
    session: AsyncSession, source: Source, where: list[ColumnElement[bool]], column: Any
) -> list[tuple[Any, Totals]]:
    """Each group's totals, in ranking order."""
    stmt = select(column, *source.sums).where(*where).group_by(column)
    found = [(row[0], totals_of(row[1:])) for row in await session.execute(stmt)]
    return sorted(found, key=lambda item: (-item[1].total_tokens, -item[1].requests, item[0]))


async def _scanned(
    session: AsyncSession, source: Source, where: list[ColumnElement[bool]], column: Any, limit: int
) -> list[tuple[Any, Totals]]:
    """Two statements: the ranking sums only what it orders by (grouped by key it aggregates every active key of the
    range, so each column summed costs), then the full totals of the winners alone, found by id."""
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
    found = dict(await _summed(session, source, [*where, column.in_(winners)], column))
    return [(value, found[value]) for value in winners]


async def _by_threshold(
    session: AsyncSession,
    source: Source,
    where: list[ColumnElement[bool]],
    *,
    column: Any,
    limit: int,
    span: tuple[int, int],
    depth: int,
) -> list[tuple[Any, Totals]] | None:
    """The winners, or None when the `depth` heaviest groups of each month cannot prove them. Two statements."""
    t = source.table
    heads = []
    for month in months_of(*span):
        # The grain is written out, not bound: the planner then uses the partial index of month rows by tokens.
        head = (
            select(literal(month).label("month"), column.label("id"), t.total_tokens.label("tokens"))
            .where(*where, t.grain == literal_column(str(MONTH)), t.bucket == month)
            .order_by(t.total_tokens.desc())
            .limit(depth)
            .subquery()
        )
        heads.append(select(head.c.month, head.c.id, head.c.tokens))
    read: dict[int, list[int]] = defaultdict(list)
    candidates = set()
    for month, value, tokens in await session.execute(union_all(*heads) if len(heads) > 1 else heads[0]):
        read[int(month)].append(int(tokens))
        candidates.add(value)
    if not candidates:
        return []  # the months hold every call of the range: none
    # The most tokens any group not read can have: in each month, at most the least read there (nothing, when
    # fewer than `depth` groups called in it: all of them were read).
    bound = sum(min(tokens) for tokens in read.values() if len(tokens) == depth)
    found = await _summed(session, source, [*where, source.span(*span), column.in_(candidates)], column)
    everyone = all(len(tokens) < depth for tokens in read.values())
    if everyone or (len(found) >= limit and found[limit - 1][1].total_tokens > bound):
        return found[:limit]
    return None
