"""The groups with the most tokens (then requests, then id) in a range, for server.domain.usage_rollups.

Grouped by API key, summing every key that called in a month is what costs (a tenant's ~64,600 active keys of
100,000, ~200,000 day rows). The ranking first reads the heaviest keys of each calendar month the range touches,
from the month rows of `usage_api_key_rollups` (indexed by tokens), and sums those candidates exactly over the
range. It is a threshold algorithm: a key not read has at most the tokens of the last key read in each month, so
once the last winner's exact sum is above the sum of those, no unread key can rank among the winners. When the first
read cannot prove that, a deeper one goes on in each month from where it stopped (reading and summing only keys not
read yet). When that does not happen with a few hundred candidates a month (tokens spread evenly, or calls without
tokens), every key of the range is summed, as every other grouping is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import ColumnElement, literal, literal_column, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain._usage_sources import MONTH, GroupBy, Source, Totals, group_column, months_of, totals_of

__all__ = ["ranked"]

# Candidates read per month, in multiples of the winners wanted: most rankings end with the first depth. A deeper
# pass continues each month's read where the previous one stopped.
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
        heads = _Heads(source, where, column=column, limit=limit, span=span)
        for depth in _DEPTHS:
            found = await heads.deeper(session, depth * limit)
            if found is not None:
                return found
    return await _scanned(session, source, [*where, source.span(*span)], column, limit)


async def _summed(
    session: AsyncSession, source: Source, where: list[ColumnElement[bool]], column: Any
) -> list[tuple[Any, Totals]]:
    """Each group's totals, in ranking order."""
    stmt = select(column, *source.sums).where(*where).group_by(column)
    return _in_order([(row[0], totals_of(row[1:])) for row in await session.execute(stmt)])


def _in_order(found: list[tuple[Any, Totals]]) -> list[tuple[Any, Totals]]:
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


class _Heads:
    """The heaviest groups of each month of a range, read from the top in passes that each go on where the previous
    one stopped, and every group read so far summed exactly over the range, once."""

    def __init__(
        self, source: Source, where: list[ColumnElement[bool]], *, column: Any, limit: int, span: tuple[int, int]
    ) -> None:
        self._source = source
        self._where = where
        self._column = column
        self._limit = limit
        self._span = span
        # The months that may hold groups not read yet: how many were read there, the fewest tokens read there and
        # the groups read with that many (the next pass reads on from those tokens, without them).
        self._open: dict[int, tuple[int, int | None, set[Any]]] = {m: (0, None, set()) for m in months_of(*span)}
        self._found: list[tuple[Any, Totals]] = []  # every group read, with its sums, in ranking order

    async def deeper(self, session: AsyncSession, depth: int) -> list[tuple[Any, Totals]] | None:
        """The winners, or None when the `depth` heaviest groups of each month (`depth` above any earlier pass's)
        cannot prove them. Two statements, reading only groups no earlier pass read."""
        t, column = self._source.table, self._column
        heads = []
        for month, (done, least, at_least) in self._open.items():
            # The grain is written out, not bound: the planner then uses the partial index of month rows by tokens.
            conditions = [*self._where, t.grain == literal_column(str(MONTH)), t.bucket == month]
            if least is not None:
                # Ordered by tokens alone, so read in the index's order: ties are told apart by what was read.
                conditions += [t.total_tokens <= least, or_(t.total_tokens < least, column.not_in(at_least))]
            head = (
                select(literal(month).label("month"), column.label("id"), t.total_tokens.label("tokens"))
                .where(*conditions)
                .order_by(t.total_tokens.desc())
                .limit(depth - done)
                .subquery()
            )
            heads.append(select(head.c.month, head.c.id, head.c.tokens))
        read: dict[int, list[tuple[Any, int]]] = defaultdict(list)
        if heads:
            for month, value, tokens in await session.execute(union_all(*heads) if len(heads) > 1 else heads[0]):
                read[int(month)].append((value, int(tokens)))
        for month, (done, least, at_least) in list(self._open.items()):
            rows = read[month]
            if done + len(rows) < depth:  # fewer than asked for: the month has been read to its end
                del self._open[month]
                continue
            fewest = min(tokens for _, tokens in rows)
            tied = {value for value, tokens in rows if tokens == fewest}
            self._open[month] = (depth, fewest, at_least | tied if fewest == least else tied)
        summed = {value for value, _ in self._found}
        candidates = {value for rows in read.values() for value, _ in rows} - summed
        if candidates:
            where = [*self._where, self._source.span(*self._span), column.in_(candidates)]
            self._found = _in_order(self._found + await _summed(session, self._source, where, column))
        # The most tokens any group not read can have: in each month, at most the fewest read there (nothing in a
        # month read to its end).
        bound = sum(least or 0 for _, least, _ in self._open.values())
        found, limit = self._found, self._limit
        if not self._open or (len(found) >= limit and found[limit - 1][1].total_tokens > bound):
            return found[:limit]
        return None
