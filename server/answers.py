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

__all__ = ["ANSWERS", "Answers"]

S = TypeVar("S")
M = TypeVar("M")


class _Answer:
    __slots__ = ("encodings", "message", "source")

    def __init__(self, source: object, message: object) -> None:
        self.source = source
        self.message = message
        self.encodings: dict[str, bytes] = {}  # codec name -> the message's bytes


class _Encoding:
    __slots__ = ("compressed", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.compressed: dict[str, bytes] = {}  # compression name -> the bytes compressed


class Answers:
    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._by_source: dict[int, _Answer] = {}  # in insertion order: the oldest is dropped first
        self._by_message: dict[int, _Answer] = {}
        self._by_data: dict[int, _Encoding] = {}

    def message(self, source: S, build: Callable[[S], M]) -> M:
        """The message built from `source`: built now, or the one built the last time this very object came."""
        kept = self._by_source.get(id(source))
        if kept is not None and kept.source is source:
            return kept.message  # type: ignore[return-value]
        message = build(source)
        if len(self._by_source) >= self._size:
            self._drop(next(iter(self._by_source.values())))
        answer = _Answer(source, message)
        self._by_source[id(source)] = answer
        self._by_message[id(message)] = answer
        return message

    def encoded(self, message: Any, codec: str, encode: Callable[[Any], bytes]) -> bytes:
        kept = self._by_message.get(id(message))
        if kept is None or kept.message is not message:
            return encode(message)
        data = kept.encodings.get(codec)
        if data is None:
            data = kept.encodings[codec] = encode(message)
            self._by_data[id(data)] = _Encoding(data)
        return data

    def compressed(self, data: Any, compression: str, compress: Callable[[Any], bytes]) -> bytes:
        kept = self._by_data.get(id(data))
        if kept is None or kept.data is not data:
            return compress(data)
        packed = kept.compressed.get(compression)
        if packed is None:
            packed = kept.compressed[compression] = compress(data)
        return packed

    def _drop(self, answer: _Answer) -> None:
        del self._by_source[id(answer.source)]
        del self._by_message[id(answer.message)]
        for data in answer.encodings.values():
            self._by_data.pop(id(data), None)  # b"" is one object: two answers may share an encoding


ANSWERS = Answers()  # the process's: handlers fill it, the management codecs and gzip read it
