"""Rows of `captured_exchanges`: made from a call's exchange (bodies sealed with the platform's secret key), listed
newest first by keyset pages, one opened with its usage row, pruned by age."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer
from sqlalchemy.sql.elements import ColumnElement

from server.capture.exchange import Exchange
from server.errors import NotFound
from server.store.keyset import filtered, newest_first
from server.store.models import CapturedExchangeRow, UsageEventRow

__all__ = [
    "EXCHANGE_SHAPE",
    "ExchangeFilter",
    "ExchangePage",
    "Opened",
    "delete_tenant_exchanges",
    "exchange_row",
    "list_exchanges",
    "open_bodies",
    "open_exchange",
    "prune_exchanges",
]

Seal = Callable[[bytes], str]  # SecretBox.seal_blob
Open = Callable[[str], bytes]  # SecretBox.open_blob
_LENGTH = 4  # the request's length, big-endian, before the request and the response in the sealed plaintext

# The columns of an exchange row in the order `exchange_row` gives them (occurred_at last, as server.metering
# writes rows).
EXCHANGE_SHAPE = (
    "id",
    "tenant_id",
    "api_key_id",
    "service_account_id",
    "user_id",
    "model_id",
    "call_kind",
    "status",
    "sealed",
    "request_bytes",
    "response_bytes",
    "request_truncated",
    "response_truncated",
    "occurred_at",
)


def open_bodies(sealed: str, open_sealed: Open) -> tuple[bytes, bytes]:
    plain = zlib.decompress(open_sealed(sealed))
    size = int.from_bytes(plain[:_LENGTH], "big")
    return plain[_LENGTH : _LENGTH + size], plain[_LENGTH + size :]


def _compressed(plain: bytes) -> bytes:
    """zlib at level 1 with a 16 KB window and small hash tables (wbits 14, memLevel 4; any zlib reader opens it):
    its state, about 75 KB, stays under glibc's heap trim threshold, where zlib.compress's 256 KB is handed back to
    the system after each call and faulted in afresh by the next. On the development machine 8 us an exchange against
    50 us, the same size for the bench's bodies and for 58 KB of them."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 14, 4)
    return packer.compress(plain) + packer.flush()


def exchange_row(exchange: Exchange, seal: Seal) -> tuple[Any, ...]:
    """The row of a metered exchange in `EXCHANGE_SHAPE`'s order, its bodies sealed (the clear bytes are never
    written anywhere): both compressed and sealed together, one encryption per exchange, as text. Compressed first:
    JSON and streamed events shrink several times (a short stream of 1.2 KB to 0.2 KB), and sealing and writing
    fewer bytes saves more than the compression costs."""
    usage, at = exchange.usage, exchange.occurred_at
    if usage is None or at is None:
        raise ValueError("only a metered exchange is stored")
    tenant_id, api_key_id, service_account_id, user_id, model_id, call_kind, status = usage
    request = exchange.request_body
    plain = len(request).to_bytes(_LENGTH, "big") + request + b"".join(exchange.response_chunks)
    return (
        exchange.id,
        tenant_id[:64],
        api_key_id[:64],
        service_account_id[:64],
        user_id[:128],
        model_id[:128],
        call_kind,
        status,
        seal(_compressed(plain)),
        exchange.request_size,
        exchange.response_size,
        exchange.request_size > len(request),
        exchange.response_size > exchange.kept,
        at,
    )


@dataclass(frozen=True)
class ExchangeFilter:
    """Every set field narrows the list; `tenant_id` None means every tenant (operators only)."""

    tenant_id: str | None = None
    api_key_id: str = ""
    service_account_id: str = ""
    user_id: str = ""
    model: str = ""
    call_kind: int = 0
    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True)
class ExchangePage:
    exchanges: list[CapturedExchangeRow]
    next_token: str


def _conditions(wanted: ExchangeFilter) -> list[ColumnElement[bool]]:
    row = CapturedExchangeRow
    found = filtered(
        (
            (row.api_key_id, wanted.api_key_id),
            (row.service_account_id, wanted.service_account_id),
            (row.user_id, wanted.user_id),
            (row.model_id, wanted.model),
        ),
        row.occurred_at,
        wanted.start,
        wanted.end,
    )
    if wanted.tenant_id is not None:
        found.append(row.tenant_id == wanted.tenant_id)
    if wanted.call_kind:
        found.append(row.call_kind == wanted.call_kind)
    return found


async def list_exchanges(
    session: AsyncSession, wanted: ExchangeFilter, *, page_size: int, page_token: str
) -> ExchangePage:
    """A page, newest first. Only the columns a list shows are read: the sealed bodies stay in the database."""
    row = CapturedExchangeRow
    query = select(row).where(*_conditions(wanted)).options(defer(row.sealed))
    rows, token = await newest_first(
        session, query, row.occurred_at, row.id, page_size=page_size, page_token=page_token
    )
    return ExchangePage(list(rows), token)


@dataclass(frozen=True)
class Opened:
    row: CapturedExchangeRow
    usage: UsageEventRow | None  # None only if its usage row was deleted since (nothing here deletes them)
    request_body: bytes
    response_body: bytes


async def open_exchange(session: AsyncSession, exchange_id: str, tenant_id: str | None, open_sealed: Open) -> Opened:
    """One exchange with its bodies opened, within `tenant_id` (None: any tenant, for operators); not_found when
    there is none there, so another tenant's exchange is not told apart from a missing one."""
    conditions = [CapturedExchangeRow.id == exchange_id]
    if tenant_id is not None:
        conditions.append(CapturedExchangeRow.tenant_id == tenant_id)
    row = await session.scalar(select(CapturedExchangeRow).where(*conditions))
    if row is None:
        raise NotFound(f"no captured exchange {exchange_id!r}", field="id")
    usage = await session.scalar(select(UsageEventRow).where(UsageEventRow.capture_id == exchange_id))
    request, response = open_bodies(row.sealed, open_sealed)
    return Opened(row, usage, request, response)


async def prune_exchanges(session: AsyncSession, before: datetime) -> int:
    """Deletes exchanges captured before `before` (the retention's edge); returns how many."""
    result = await session.execute(delete(CapturedExchangeRow).where(CapturedExchangeRow.occurred_at < before))
    return int(getattr(result, "rowcount", 0) or 0)


async def delete_tenant_exchanges(session: AsyncSession, tenant_id: str) -> None:
    """A deleted tenant's captured content goes with it (its policies and grants go by foreign key; exchanges have
    none, so that a batch of usage rows never fails on a tenant deleted while its calls were queued)."""
    await session.execute(delete(CapturedExchangeRow).where(CapturedExchangeRow.tenant_id == tenant_id))
