"""Writing and deleting chunk rows: the part both engines share."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.models import RagChunkRow
from server.store.rag_index.base import ChunkInput, bump_generation

__all__ = ["delete_chunk_rows", "insert_chunk_rows"]


async def insert_chunk_rows(
    session: AsyncSession,
    *,
    rag_id: str,
    file_id: str,
    chunks: Sequence[ChunkInput],
    blobs: Sequence[bytes | None],
) -> list[RagChunkRow]:
    rows = [
        RagChunkRow(rag_id=rag_id, file_id=file_id, ordinal=i, text=c.text, token_count=c.token_count, embedding=blob)
        for i, (c, blob) in enumerate(zip(chunks, blobs, strict=True))
    ]
    session.add_all(rows)
    await session.flush()
    await bump_generation(session, rag_id)
    return rows


async def delete_chunk_rows(session: AsyncSession, *, rag_id: str, file_id: str) -> None:
    await session.execute(delete(RagChunkRow).where(RagChunkRow.rag_id == rag_id, RagChunkRow.file_id == file_id))
    await bump_generation(session, rag_id, removal=True)
