"""Keyset pages of rows listed newest first by (time, id): a page token names the last row of its page, so rows
written meanwhile neither repeat nor shift a page (the audit trail and captured exchanges list this way)."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_
from sqlalchemy.sql.elements import ColumnElement

from server.errors import InvalidArgument
from server.store.db import as_utc

__all__ = ["after_token", "bounded_page_size", "token_of"]

MAX_PAGE_SIZE = 1000
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
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("page_token is not a token this API returned", field="page_token") from None
    return or_(time_column < at, and_(time_column == at, id_column < row_id))
