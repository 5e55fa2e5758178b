"""Response messages handed out again unchanged, with their encodings.

A domain cache answers the very same object while its data is unchanged (e.g. `server.domain.groups.GroupLists`).
The handler turns that object into its response message once (`Answers.message`), and the codecs and gzip then
encode and compress that message once (`Answers.encoded`, `Answers.compressed`): a repeated 50-group ListGroups
skips building 50 protobuf messages, the JSON dict and its gzip. Objects are known by identity, and each entry keeps
its objects alive, so a freed object's reused id is never mistaken for it. Sources must be immutable (tuples of
tuples): a kept message stands for its source for as long as the entry lives.

Only messages built through `message()` are remembered; the codecs encode every other message as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from server.bounded import WeightedFifo

__all__ = ["ANSWERS", "Answers"]

S = TypeVar("S")
M = TypeVar("M")


class _Kept:
    """An object kept alive with what was derived from it, by name (a codec's bytes, a compression's)."""

    __slots__ = ("derived", "obj")

    def __init__(self, obj: object) -> None:
        self.obj = obj
        self.derived: dict[str, bytes] = {}


class _Answer:
    __slots__ = ("message", "source")

    def __init__(self, source: object, message: _Kept) -> None:
        self.source = source
        self.message = message


class Answers:
    """`budget` bounds what is kept by weight (what `message` is told each source weighs, e.g. its items), the
    oldest answer dropped first with its encodings."""

    def __init__(self, budget: int = 100_000) -> None:
        self._by_source: WeightedFifo[int, _Answer] = WeightedFifo(budget, on_drop=self._forget)
        self._by_message: dict[int, _Kept] = {}
        self._by_data: dict[int, _Kept] = {}

    def message(self, source: S, build: Callable[[S], M], weight: int = 1) -> M:
        """The message built from `source`: built now, or the one built the last time this very object came."""
        kept = self._by_source.get(id(source))
        if kept is not None and kept.source is source:
            return kept.message.obj  # type: ignore[return-value]
        message = build(source)
        answer = _Answer(source, _Kept(message))
        if self._by_source.put(id(source), answer, weight):
            self._by_message[id(message)] = answer.message
        return message

    def encoded(self, message: Any, codec: str, encode: Callable[[Any], bytes]) -> bytes:
        data, new = _derive(self._by_message, message, codec, encode)
        if new:
            self._by_data[id(data)] = _Kept(data)
        return data

    def compressed(self, data: Any, compression: str, compress: Callable[[Any], bytes]) -> bytes:
        return _derive(self._by_data, data, compression, compress)[0]

    def _forget(self, _source_id: int, answer: _Answer) -> None:
        self._by_message.pop(id(answer.message.obj), None)
        for data in answer.message.derived.values():
            self._by_data.pop(id(data), None)  # b"" is one object: two answers may share an encoding


def _derive(kept_by_id: dict[int, _Kept], obj: Any, name: str, make: Callable[[Any], bytes]) -> tuple[bytes, bool]:
    """What `make` derives from `obj`, and whether it was made now and kept. Objects not kept are derived from
    every time."""
    kept = kept_by_id.get(id(obj))
    if kept is None or kept.obj is not obj:
        return make(obj), False
    derived = kept.derived.get(name)
    if derived is not None:
        return derived, False
    derived = kept.derived[name] = make(obj)
    return derived, True


ANSWERS = Answers()  # the process's: handlers fill it, the management codecs and gzip read it
