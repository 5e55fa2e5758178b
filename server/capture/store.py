"""Rows of `captured_exchanges` and `captured_bodies`: made from a batch of metered exchanges (their bodies sealed with
the platform's secret key, a group of one tenant's exchanges at a time), listed newest first by keyset pages, one
opened with its usage row, pruned by age.

Bodies are sealed in groups, not one exchange at a time: the meter hands over a batch (up to a thousand calls), and
each tenant's exchanges in it are compressed and sealed together, up to `GROUP_BYTES` of plaintext a group. Sealed one
by one, a compressor's fixed cost per stream (zlib's state set up and torn down: 8-25 us in a busy gateway, more
than the bytes themselves), an AES-GCM call, a nonce and base64 made most of what a captured call cost the gateway,
and the few hundred bytes of each exchange's own blob made its row dearer to write. A group holds one tenant's content
only, so deleting a tenant deletes its groups; opening one exchange opens its group (at most `GROUP_BYTES` plus one
exchange's bodies).

A group is compressed with Zstandard at level 1: on JSON carrying words (prompts) 3.3 ns a byte for 2.7x smaller,
where deflate at level 1, the cheapest compressor Python 3.11 ships, took 11.3 ns a byte for 2.3x (docs/audit.md,
Cost). Groups sealed before then hold raw deflate and still open: a Zstandard frame starts with its magic number,
which no raw deflate stream can (those bytes would open a stored block whose length check fails).
"""

from __future__ import annotations

import random
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import zstandard
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer
from sqlalchemy.sql.elements import ColumnElement

from server.capture.exchange import Exchange
from server.errors import NotFound
from server.store.keyset import filtered, newest_first
from server.store.models import CapturedBodiesRow, CapturedExchangeRow, UsageEventRow

__all__ = [
    "BODIES_SHAPE",
    "EXCHANGE_SHAPE",
    "GROUP_BYTES",
    "ExchangeFilter",
    "ExchangePage",
    "Opened",
    "SealedBatch",
    "delete_tenant_exchanges",
    "list_exchanges",
    "open_bodies",
    "open_exchange",
    "open_member",
    "prune_exchanges",
    "seal_exchanges",
]

Seal = Callable[[bytes], str]  # SecretBox.seal_blob
Open = Callable[[str], bytes]  # SecretBox.open_blob
GROUP_BYTES = 256 * 1024  # a group is closed once its plaintext reaches this
_LENGTH = struct.Struct(">I")  # lengths in a group's plaintext, and in a row's own before migration 0010
_RAW_DEFLATE = -15  # zlib's wbits for a raw deflate stream with a 32 KB window: groups sealed before Zstandard
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_LEVEL = 1
_THREAD = threading.local()

# The columns of the rows `seal_exchanges` makes, in the order it gives them (occurred_at last, as server.metering
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
    "bodies_id",
    "bodies_index",
    "request_bytes",
    "response_bytes",
    "request_truncated",
    "response_truncated",
    "occurred_at",
)
BODIES_SHAPE = ("id", "tenant_id", "sealed", "occurred_at")


@dataclass(frozen=True)
class SealedBatch:
    """A batch's exchanges ready to be written: the rows of their bodies' groups (`BODIES_SHAPE`) and their own
    (`EXCHANGE_SHAPE`)."""

    bodies: list[tuple[Any, ...]]
    exchanges: list[tuple[Any, ...]]


class _Group:
    """One tenant's exchanges whose bodies are sealed together. Its plaintext: the number of exchanges, each one's
    request and response lengths (4 bytes each, big-endian), then each one's request and response bytes in order."""

    __slots__ = ("id", "lengths", "newest", "pieces", "size", "tenant_id")

    def __init__(self, tenant_id: str, at: datetime) -> None:
        # Ids as exchanges' (server.capture.exchange): the time first, so new rows land at the end of the key's index.
        self.id = f"cab_{time.time_ns() // 1_000_000:012x}{random.getrandbits(64):016x}"
        self.tenant_id = tenant_id
        self.lengths: list[int] = []
        self.pieces: list[bytes] = [b""]  # the header goes first, once the lengths are all known
        self.size = 0
        self.newest = at

    def row(self, seal: Seal) -> tuple[Any, ...]:
        """Compressed first: a token stream's repeated events shrink many times over, JSON text about 2.7x, for
        less CPU than sealing and storing them whole would take. Without a checksum (AES-GCM authenticates the
        group already); with the plaintext's size in the frame, which opening it reads."""
        self.pieces[0] = struct.pack(f">{len(self.lengths) + 1}I", len(self.lengths) // 2, *self.lengths)
        compressed = _compressor().compress(b"".join(self.pieces))
        return (self.id, self.tenant_id[:64], seal(compressed), self.newest)


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's compressor: making one costs 12 us (its context allocated), and one may not be used by two
    threads at once (the meter seals in worker threads)."""
    compressor: zstandard.ZstdCompressor | None = getattr(_THREAD, "compressor", None)
    if compressor is None:
        compressor = _THREAD.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return compressor


def seal_exchanges(exchanges: Iterable[Exchange], seal: Seal) -> SealedBatch:
    """The rows of a batch of metered exchanges, each tenant's bodies sealed in groups of up to `GROUP_BYTES` of
    plaintext (an exchange is never split: one past the bound closes its group). The clear bytes are never written
    anywhere. CPU-bound and touching nothing shared: the meter runs it in a worker thread."""
    bodies: list[tuple[Any, ...]] = []
    rows: list[tuple[Any, ...]] = []
    groups: dict[str, _Group] = {}  # each tenant's open group
    for exchange in exchanges:
        usage, at = exchange.usage, exchange.occurred_at
        if usage is None or at is None:
            raise ValueError("only a metered exchange is stored")
        tenant_id, api_key_id, service_account_id, user_id, model_id, call_kind, status = usage
        group = groups.get(tenant_id)
        if group is None:
            group = groups[tenant_id] = _Group(tenant_id, at)
        elif at > group.newest:
            group.newest = at
        request, kept = exchange.request_body, exchange.kept
        index = len(group.lengths) // 2
        group.lengths += (len(request), kept)
        group.pieces.append(request)
        group.pieces += exchange.response_chunks
        group.size += len(request) + kept
        rows.append(
            (
                exchange.id,
                tenant_id[:64],
                api_key_id[:64],
                service_account_id[:64],
                user_id[:128],
                model_id[:128],
                call_kind,
                status,
                group.id,
                index,
                exchange.request_size,
                exchange.response_size,
                exchange.request_size > len(request),
                exchange.response_size > kept,
                at,
            )
        )
        if group.size >= GROUP_BYTES:
            bodies.append(group.row(seal))
            del groups[tenant_id]
    bodies.extend(group.row(seal) for group in groups.values())
    return SealedBatch(bodies, rows)


def open_member(sealed: str, index: int, open_sealed: Open) -> tuple[bytes, bytes]:
    """The request and response bodies of the `index`th exchange of a sealed group."""
    compressed = open_sealed(sealed)
    if compressed.startswith(_ZSTD_MAGIC):
        plain = zstandard.ZstdDecompressor().decompress(compressed)
    else:  # sealed before Zstandard
        plain = zlib.decompress(compressed, wbits=_RAW_DEFLATE)
    (count,) = _LENGTH.unpack_from(plain)
    if not 0 <= index < count:
        raise ValueError(f"a group of {count} exchanges has none at {index}")
    lengths = struct.unpack_from(f">{2 * count}I", plain, _LENGTH.size)
    start = _LENGTH.size * (1 + 2 * count) + sum(lengths[: 2 * index])
    middle = start + lengths[2 * index]
    return plain[start:middle], plain[middle : middle + lengths[2 * index + 1]]


def open_bodies(sealed: str, open_sealed: Open) -> tuple[bytes, bytes]:
    """The bodies of an exchange written before migration 0010, sealed alone in its own row: its request's length,
    the request and the response, compressed."""
    plain = zlib.decompress(open_sealed(sealed))
    (size,) = _LENGTH.unpack_from(plain)
    return plain[_LENGTH.size : _LENGTH.size + size], plain[_LENGTH.size + size :]


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
    if row.sealed is not None:  # written before its bodies were sealed in groups
        request, response = open_bodies(row.sealed, open_sealed)
    else:
        group = await session.scalar(select(CapturedBodiesRow.sealed).where(CapturedBodiesRow.id == row.bodies_id))
        if group is None or row.bodies_index is None:
            raise LookupError(f"the bodies of captured exchange {exchange_id!r} are missing")
        request, response = open_member(group, row.bodies_index, open_sealed)
    return Opened(row, usage, request, response)


async def prune_exchanges(session: AsyncSession, before: datetime) -> int:
    """Deletes exchanges captured before `before` (the retention's edge), and the groups of bodies whose newest
    exchange is (so every exchange of theirs is); returns how many exchanges. A group that straddles the edge stays
    until a later sweep finds all of it past: its older exchanges' bodies outlive their rows by at most that long."""
    result = await session.execute(delete(CapturedExchangeRow).where(CapturedExchangeRow.occurred_at < before))
    await session.execute(delete(CapturedBodiesRow).where(CapturedBodiesRow.occurred_at < before))
    return int(getattr(result, "rowcount", 0) or 0)


async def delete_tenant_exchanges(session: AsyncSession, tenant_id: str) -> None:
    """A deleted tenant's captured content goes with it (its policies and grants go by foreign key; exchanges have
    none, so that a batch of usage rows never fails on a tenant deleted while its calls were queued)."""
    await session.execute(delete(CapturedExchangeRow).where(CapturedExchangeRow.tenant_id == tenant_id))
    await session.execute(delete(CapturedBodiesRow).where(CapturedBodiesRow.tenant_id == tenant_id))
