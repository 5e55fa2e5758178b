"""The ids and metadata of RAGs' ready files, kept in the process between filtered searches.

A search filtered by metadata is restricted to the ready files that match. The database narrows a filter with an eq
or in condition on strings to the files whose metadata text holds them (`rag_files.matching_file_ids`), and that read
stays the cheapest way to answer one. Any other filter (on numbers, ne, nin, the orderings) is matched against every
file, so each such search read and decoded every file's metadata again: ~23 ms of ~33 at 20,000 files. Held here,
the files are matched in memory.

What is held is the RAG's files at one generation of its index, and every change to which files are ready or what
their metadata say moves that generation in the same transaction (chunks stored or removed, and
`rag_files.update_metadata`: `bump_generation`). The generation is read first, in the search's own session, so what is
then read is at least as new as the generation it is held under, and a replica holding an older one reads again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import rag_files
from server.domain.rag_filters import MetadataCondition, matcher, texts_needed
from server.store.rag_index.base import current_generation

__all__ = ["MAX_BYTES", "WORTH_HOLDING", "ReadyFiles", "held_bytes"]

# Held across RAGs, the least recently searched dropped first; a RAG whose files need more is read every time.
MAX_BYTES = 64 << 20
WORTH_HOLDING = 1_000  # fewer files are read in about a millisecond: not worth their memory
_ANSWERS = 8  # filters answered a RAG, each a list of ids (8 bytes a file): at most a fifth of what its files take


@dataclass
class _Held:
    generation: int
    files: Sequence[tuple[str, Mapping[str, Any]]]
    size: int  # estimated bytes
    # The latest filters' answers: an application tends to send the same few, and matching every file is most of a
    # held search's time (~6 ms of ~7.5 at 20,000 files).
    answers: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)

    def matching(self, conditions: Sequence[MetadataCondition]) -> list[str]:
        key = repr([(c.key, c.op, c.value) for c in conditions])  # apart: True and 1, 1 and 1.0, nan and inf
        found = self.answers.get(key)
        if found is None:
            match = matcher(conditions)
            found = self.answers[key] = [file_id for file_id, metadata in self.files if match(metadata)]
            if len(self.answers) > _ANSWERS:
                self.answers.popitem(last=False)
        else:
            self.answers.move_to_end(key)
        return list(found)  # the caller's to keep or change


class ReadyFiles:
    """A process's ready files of the RAGs it searches with filters, each RAG's held while its generation stands."""

    def __init__(self, max_bytes: int = MAX_BYTES, worth_holding: int = WORTH_HOLDING) -> None:
        self._max_bytes, self._worth_holding = max_bytes, worth_holding
        self._held: OrderedDict[str, _Held] = OrderedDict()

    async def matching(self, session: AsyncSession, rag_id: str, conditions: Sequence[MetadataCondition]) -> list[str]:
        """The ids of the RAG's ready files whose metadata meet every condition."""
        if texts_needed(conditions):  # read from the database, narrowed: cheaper than matching every file held
            return await rag_files.matching_file_ids(
                session, rag_id=rag_id, conditions=conditions, status=rag_files.READY
            )
        return (await self._files(session, rag_id)).matching(conditions)

    async def _files(self, session: AsyncSession, rag_id: str) -> _Held:
        generation = await current_generation(session, rag_id)  # first: what is read next is at least as new
        held = self._held.get(rag_id)
        if held is not None and held.generation == generation:
            self._held.move_to_end(rag_id)
            return held
        rows = await rag_files.metadata_texts(session, rag_id, status=rag_files.READY)
        files = [(file_id, rag_files.decoded_metadata(text)) for file_id, text in rows]
        held = _Held(generation, files, sum(held_bytes(text) for _, text in rows))
        self._hold(rag_id, held)
        return held

    def _hold(self, rag_id: str, held: _Held) -> None:
        self._held.pop(rag_id, None)
        if len(held.files) < self._worth_holding or held.size > self._max_bytes:
            return
        self._held[rag_id] = held
        total = sum(h.size for h in self._held.values())
        while total > self._max_bytes:
            _, dropped = self._held.popitem(last=False)
            total -= dropped.size


def held_bytes(metadata_text: str | None) -> int:
    """What holding a file is reckoned to take, from its metadata's JSON text (decoded, 20,000 files of three short
    keys took ~500 bytes each, their ids included)."""
    return 300 + 3 * len(metadata_text or "")
