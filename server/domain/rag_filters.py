"""Metadata filters of RAG files, one rule for /files listing and /context search alike.

Three forms are accepted:
- shorthand: `{"metadata.source_group_ids": ["g1", "g2"], "lang": "de"}` — a list means "any of", a scalar "equals";
- typed: `[{"key": "year", "op": "gte", "value": 2020}, ...]` with op in eq, ne, in, nin, gt, gte, lt, lte;
- OpenAI's vector-store filters: `{"type": "gte", "key": "year", "value": 2020}`, or `{"type": "and", "filters":
  [...]}` of those (an object with `type` and `key`, or with exactly `type` and `filters`, is read so; read as
  shorthand it would match nothing). `or` is refused, as is any other form that would silently match nothing.
Conditions are ANDed (at most `_MAX_CONDITIONS`); an in/nin list holds at most `MAX_VALUES` values. A key may carry the
`metadata.` prefix. When the stored value is a list (such as
`source_group_ids`), eq/in match if any element matches and ne/nin if none does; ordering ops compare numbers with
numbers and strings with strings, and never match across types.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.errors import InvalidArgument

__all__ = ["MAX_VALUES", "OPERATORS", "MetadataCondition", "matcher", "matches", "parse_filters", "texts_needed"]

OPERATORS = frozenset({"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte"})
_ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
_MAX_CONDITIONS = 32
# Values of one in/nin list: far more than a user's groups (source_group_ids, the usual list) while keeping a filter's
# matching cheap; the whole list is matched in process (`texts_needed` gives the database at most `_MAX_TEXTS`).
MAX_VALUES = 1000
# Texts one condition may give the database's pre-filter (an OR of LIKEs): SQLite refuses an expression deeper than
# 1000 ("Expression tree is too large"), and past a few dozen the narrowing is no longer worth its LIKEs anyway.
_MAX_TEXTS = 64
_Scalar = str | int | float | bool


@dataclass(frozen=True)
class MetadataCondition:
    key: str
    op: str
    value: Any


def parse_filters(raw: Any, field: str = "filters") -> list[MetadataCondition]:
    if raw is None:
        return []
    if _openai_form(raw):
        found: list[MetadataCondition] = []
        _openai_conditions(raw, field, found)
        return found
    if isinstance(raw, Mapping):
        items = [{"key": key, "op": "in" if isinstance(v, list) else "eq", "value": v} for key, v in raw.items()]
    elif isinstance(raw, list):
        items = raw
    else:
        raise InvalidArgument(f"{field} must be an object or a list of conditions", field=field)
    _bounded(len(items), field)
    return [_condition(item, f"{field}[{i}]") for i, item in enumerate(items)]


def _bounded(count: int, field: str) -> None:
    if count > _MAX_CONDITIONS:
        raise InvalidArgument(f"{field} accepts at most {_MAX_CONDITIONS} conditions", field=field)


def _openai_form(raw: Any) -> bool:
    return isinstance(raw, Mapping) and "type" in raw and ("key" in raw or raw.keys() == {"type", "filters"})


def _openai_conditions(raw: Any, field: str, found: list[MetadataCondition]) -> None:
    """OpenAI's comparison and compound filters into `found`, an `and`'s parts flattened (each bounded by depth:
    the conditions they add up to are counted as they come)."""
    if not _openai_form(raw):
        raise InvalidArgument(f"{field} must be a comparison or an 'and' filter", field=field)
    kind = raw["type"]
    if kind == "or":
        raise InvalidArgument(
            f"{field}.type: 'or' filters are not supported; conditions combine with and", field=f"{field}.type"
        )
    if kind != "and":
        found.append(_condition(raw, field, op_name="type"))
        _bounded(len(found), field)
        return
    parts = raw["filters"]
    if not isinstance(parts, list) or not parts:
        raise InvalidArgument(f"{field}.filters must be a non-empty list of filters", field=f"{field}.filters")
    _bounded(len(found) + len(parts), field)
    for i, part in enumerate(parts):
        _openai_conditions(part, f"{field}.filters[{i}]", found)


def _condition(item: Any, field: str, *, op_name: str = "op") -> MetadataCondition:
    if not isinstance(item, Mapping):
        raise InvalidArgument(f"{field} must be an object with key, op and value", field=field)
    key, op, value = item.get("key"), item.get(op_name, "eq"), item.get("value")
    if not isinstance(key, str) or not key.removeprefix("metadata.").strip():
        raise InvalidArgument(f"{field}.key must be a non-empty string", field=f"{field}.key")
    if not isinstance(op, str) or op not in OPERATORS:  # a list or object op is refused, not hashed
        raise InvalidArgument(
            f"{field}.{op_name} must be one of " + ", ".join(sorted(OPERATORS)), field=f"{field}.{op_name}"
        )
    if op in ("in", "nin"):
        if not isinstance(value, list) or not value or not all(_is_scalar(v) for v in value):
            raise InvalidArgument(f"{field}.value must be a non-empty list of scalars", field=f"{field}.value")
        if len(value) > MAX_VALUES:
            raise InvalidArgument(f"{field}.value holds more than {MAX_VALUES} values", field=f"{field}.value")
    elif not _is_scalar(value):
        raise InvalidArgument(f"{field}.value must be a string, number or boolean", field=f"{field}.value")
    return MetadataCondition(key=key.removeprefix("metadata."), op=op, value=value)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, _Scalar)


def matches(metadata: Mapping[str, Any], conditions: Sequence[MetadataCondition]) -> bool:
    return matcher(conditions)(metadata)


def matcher(conditions: Sequence[MetadataCondition]) -> Callable[[Mapping[str, Any]], bool]:
    """`matches` with the conditions read once: what a store applies to each of many files' metadata."""
    tests = [(c.key, _test(c)) for c in conditions]
    if len(tests) == 1:
        ((key, test),) = tests
        return lambda metadata: test(metadata.get(key))
    return lambda metadata: all(test(metadata.get(key)) for key, test in tests)


def texts_needed(conditions: Sequence[MetadataCondition]) -> list[set[str]]:
    """What the JSON text of any metadata that `matches` the conditions contains: for each eq or in condition on
    strings, one of a set of texts (each string JSON-encoded, its non-ASCII characters escaped as Python's json
    writes them and as they are, as jsonb and orjson write them). A store can skip metadata without them before
    `matches` decides (a stored list holds each string the same way); other conditions need no particular text, nor
    does one of more than `_MAX_TEXTS` texts (a long in list): the pre-filter is only a narrowing, never the answer."""
    needed = []
    for condition in conditions:
        values = condition.value if condition.op == "in" else [condition.value]
        if condition.op in ("eq", "in") and all(isinstance(v, str) for v in values):
            texts = {json.dumps(v, ensure_ascii=ascii) for v in values for ascii in (True, False)}
            if len(texts) <= _MAX_TEXTS:
                needed.append(texts)
    return needed


_Test = Callable[[Any], bool]


def _test(condition: MetadataCondition) -> _Test:
    """Whether a stored value (absent: None; a list: any of its elements) meets the condition."""
    op, wanted = condition.op, condition.value
    if op in _ORDERING:
        return _any_element(_ordered(_ORDERING[op], wanted))
    found = _any_element(_one_of(wanted if op in ("in", "nin") else [wanted]))
    if op in ("ne", "nin"):
        return lambda stored: not found(stored)
    return found


def _any_element(test: _Test) -> _Test:
    def found(stored: Any) -> bool:
        if isinstance(stored, list):
            return any(map(test, stored))
        return stored is not None and test(stored)

    return found


def _one_of(wanted: Sequence[_Scalar]) -> _Test:
    # True == 1 in Python; metadata types must match too, so booleans are looked up apart.
    booleans = frozenset(w for w in wanted if isinstance(w, bool))
    others = frozenset(w for w in wanted if not isinstance(w, bool))

    def test(value: Any) -> bool:
        if isinstance(value, bool):
            return value in booleans
        return isinstance(value, str | int | float) and value in others

    return test


def _ordered(compare: Callable[[Any, Any], bool], wanted: _Scalar) -> _Test:
    # Numbers compare with numbers and strings with strings; booleans with nothing.
    if isinstance(wanted, bool):
        return lambda _value: False
    kinds = str if isinstance(wanted, str) else (int, float)

    def test(value: Any) -> bool:
        return isinstance(value, kinds) and not isinstance(value, bool) and compare(value, wanted)

    return test
