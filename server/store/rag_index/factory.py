"""One prepared chunk index per database engine (its caches live as long as the engine)."""

from __future__ import annotations

import asyncio
import weakref

from sqlalchemy.ext.asyncio import AsyncEngine

from server.store.rag_index.base import ChunkIndex
from server.store.rag_index.postgres import PostgresChunkIndex
from server.store.rag_index.sqlite import SqliteChunkIndex

__all__ = ["chunk_index_for"]

_indexes: weakref.WeakKeyDictionary[AsyncEngine, ChunkIndex] = weakref.WeakKeyDictionary()
_lock = asyncio.Lock()


async def chunk_index_for(engine: AsyncEngine) -> ChunkIndex:
    prepared = _indexes.get(engine)
    if prepared is not None:  # every search and upload asks: no lock once the index is prepared
        return prepared
    async with _lock:
        index = _indexes.get(engine)
        if index is None:
            index = SqliteChunkIndex() if engine.dialect.name == "sqlite" else PostgresChunkIndex()
            await index.prepare(engine)
            _indexes[engine] = index
        return index
