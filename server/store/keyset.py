"""Keyset pages of rows listed newest first by (time, id): a page token names the last row of its page, so rows
written meanwhile neither repeat nor shift a page (the audit trail and captured exchanges list this way)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from server.errors import InvalidArgument
from server.store.db import as_utc

__all__ = ["Window", "after_token", "bounded_page_size", "filtered", "newest_first", "token_of"]

MAX_PAGE_SIZE = 1000
_LIKE_SPECIALS = re.compile(r"[\\%_]")  # matched literally in a search, never as LIKE wildcards
DEFAULT_PAGE_SIZE = 100


def bounded_page_size(requested: int) -> int:
    if requested < 0 or requested > MAX_PAGE_SIZE:
        raise InvalidArgument(f"page_size must be between 0 and {MAX_PAGE_SIZE}", field="page_size")
    return requested or DEFAULT_PAGE_SIZE


def token_of(at: datetime, row_id: str) -> str:
    at = as_utc(at) or at
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{row_id}".encode()).decode()


def after_token(token: str, time_column: Any, id_column: Any) -> ColumnElement[bool]:
    """Rows after the page that ended at `token` (newest first: older, or as old with a smaller id)."""
    try:
        at_text, row_id = base64.urlsafe_b64decode(token.encode()).decode().split("|", 1)
        at = datetime.fromisoformat(at_text)
        if "\x00" in row_id:  # not one of ours, and PostgreSQL's driver refused it (a 500)
            raise ValueError(row_id)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("page_token is not a token this API returned", field="page_token") from None
    return or_(time_column < at, and_(time_column == at, id_column < row_id))


def filtered(
    equal: Iterable[tuple[Any, str]], time_column: Any, start: datetime | None, end: datetime | None
) -> list[ColumnElement[bool]]:
    """A list filter's conditions: each column equal to its value when one is given (empty: any), and the time in
    [start, end) when either bound is given."""
    found: list[ColumnElement[bool]] = [column == value for column, value in equal if value]
    if start is not None:
        found.append(time_column >= start)
    if end is not None:
        found.append(time_column < end)
    return found


async def newest_first(
    session: AsyncSession, query: Select[Any], time_column: Any, id_column: Any, *, page_size: int, page_token: str
) -> tuple[Sequence[Any], str]:
    """One page of `query` (a select of one entity, already filtered) newest first by (time, id), from after
    `page_token`; and the next page's token, empty on the last page."""
    size = bounded_page_size(page_size)
    if page_token:
        query = query.where(after_token(page_token, time_column, id_column))
    query = query.order_by(time_column.desc(), id_column.desc()).limit(size + 1)
    rows = (await session.scalars(query)).all()
    if len(rows) <= size:
        return rows, ""
    last = rows[size - 1]
    return rows[:size], token_of(getattr(last, time_column.key), getattr(last, id_column.key))


@dataclass(frozen=True)
class Window:
    """Where a keyset page of an ordered list starts and how many rows to read. The domain's list functions that
    take one (model_deployments.list_readable, rags.list_readable, ...; paged by server.domain.pages.walk) answer
    their usual items, in their usual order, from after `after` (the sort key of the previous page's last item;
    None: from the start), at most `limit` of them, so a page is visible to exactly whom the whole list is."""

    after: tuple[Any, ...] | None
    limit: int
    # Only the rows where one of the list's searched columns contains this, ignoring case ("": every row).
    search: str = ""

    def apply(self, query: Select[Any], *order: Any, searched: Sequence[Any] = ()) -> Select[Any]:
        """`query` (ordered by the columns `order`) narrowed to this window; a search looks in `searched`."""
        if self.search and searched:
            pattern = "%" + _LIKE_SPECIALS.sub(r"\\\g<0>", self.search) + "%"
            query = query.where(or_(*(column.ilike(pattern, escape="\\") for column in searched)))
        if self.after is not None:
            if len(order) == 1:
                query = query.where(order[0] > self.after[0])
            else:
                query = query.where(tuple_(*order) > tuple_(*self.after))
        return query.limit(self.limit)
