"""The metadata filters' rule (server.domain.rag_filters), against a plain reading of its documentation written
here: for random metadata (every JSON type, lists of them, nested values, absent keys) and random conditions of every
operator, `matcher` and `matches` decide as the reading does."""

from __future__ import annotations

import operator
import random
from typing import Any

import pytest

from server.domain.rag_filters import MAX_VALUES, OPERATORS, matcher, matches, parse_filters
from server.errors import InvalidArgument

SCALARS: list[Any] = [0, 1, 2, -1, 1.0, 2.5, True, False, "a", "b", "", "1", "true"]
STORED: list[Any] = [*SCALARS, None, {"a": 1}, [], ["a", ["b"]]]
ORDER = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def _reading(stored: Any, op: str, wanted: Any) -> bool:
    """A list holds its elements, an absent value none; eq/in hold if an element equals a wanted value of the same
    kind (a boolean is not a number), ne/nin if none does; an ordering holds if an element compares with the value,
    numbers with numbers and strings with strings."""
    elements = stored if isinstance(stored, list) else [] if stored is None else [stored]

    def kind(value: Any) -> str:
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, int | float):
            return "number"
        return "string" if isinstance(value, str) else "other"

    if op in ORDER:
        return any(kind(e) == kind(wanted) in ("number", "string") and ORDER[op](e, wanted) for e in elements)
    values = wanted if op in ("in", "nin") else [wanted]
    equal = any(kind(e) == kind(v) and e == v for e in elements for v in values)
    return equal if op in ("eq", "in") else not equal


def _stored(rng: random.Random) -> Any:
    if rng.random() < 0.3:
        return [rng.choice(STORED) for _ in range(rng.randrange(4))]
    return rng.choice(STORED)


def _condition(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(sorted(OPERATORS))
    value = rng.sample(SCALARS, rng.randrange(1, 4)) if op in ("in", "nin") else rng.choice(SCALARS)
    return {"key": rng.choice(["k", "l", "absent"]), "op": op, "value": value}


def test_the_rule_is_its_documented_reading() -> None:
    rng = random.Random(27)
    for _ in range(3000):
        metadata = {key: _stored(rng) for key in ("k", "l") if rng.random() < 0.9}
        raw = [_condition(rng) for _ in range(rng.randrange(1, 4))]
        expected = all(_reading(metadata.get(c["key"]), c["op"], c["value"]) for c in raw)
        conditions = parse_filters(raw)
        assert matcher(conditions)(metadata) is expected, (metadata, raw)
        assert matches(metadata, conditions) is expected, (metadata, raw)


def test_no_condition_is_met_by_everything() -> None:
    assert matcher([])({}) and matcher([])({"k": 1})


def test_openai_vector_store_filters_mean_what_they_mean_there() -> None:
    """A comparison filter and an `and` of them (nested: flattened) read as the typed list does; shorthand would have
    read their `type` and `key` as metadata keys and matched nothing."""
    rng = random.Random(28)
    for _ in range(500):
        raw = [_condition(rng) for _ in range(rng.randrange(1, 4))]
        openai = [{"type": c["op"], "key": c["key"], "value": c["value"]} for c in raw]
        assert parse_filters(openai[0] if len(raw) == 1 else {"type": "and", "filters": openai}) == parse_filters(raw)
    nested = {"type": "and", "filters": [{"type": "and", "filters": [{"type": "eq", "key": "k", "value": 1}]}]}
    assert parse_filters(nested) == parse_filters([{"key": "k", "op": "eq", "value": 1}])
    assert parse_filters({"type": "pdf"}) == parse_filters([{"key": "type", "op": "eq", "value": "pdf"}])  # shorthand


def test_openai_filters_that_cannot_be_honoured_are_refused_naming_the_place() -> None:
    comparison = {"type": "eq", "key": "k", "value": 1}
    refused = [
        ({"type": "or", "filters": [comparison, comparison]}, "filters.type"),
        ({"type": "and", "filters": []}, "filters.filters"),
        ({"type": "and", "filters": [comparison, {"type": "like", "key": "k", "value": 1}]}, "filters.filters[1].type"),
        ({"type": "and", "filters": [{"key": "k"}]}, "filters.filters[0]"),
        ({"type": "and", "filters": [comparison] * 33}, "filters"),
    ]
    for raw, field in refused:
        with pytest.raises(InvalidArgument) as err:
            parse_filters(raw)
        assert err.value.field == field, (raw, err.value.field)


def test_an_operator_that_is_not_a_string_is_refused_naming_it() -> None:
    """A list or object where the operator goes was looked up in the operator set as it was: TypeError (unhashable),
    a 500 on /context, GET /files?filters= and the MCP search tool alike."""
    refused = [
        ([{"key": "a", "op": ["eq"], "value": 1}], "filters[0].op"),
        ([{"key": "a", "op": {"eq": 1}, "value": 1}], "filters[0].op"),
        ({"type": {"x": 1}, "key": "a", "value": 1}, "filters.type"),
        ({"type": "and", "filters": [{"type": ["gt"], "key": "a", "value": 1}]}, "filters.filters[0].type"),
    ]
    for raw, field in refused:
        with pytest.raises(InvalidArgument) as err:
            parse_filters(raw)
        assert err.value.field == field and "must be one of" in err.value.message, (raw, err.value)


def test_an_in_list_holds_at_most_max_values() -> None:
    values = [f"g{i}" for i in range(MAX_VALUES)]
    for op in ("in", "nin"):
        assert parse_filters([{"key": "g", "op": op, "value": values}])[0].value == values
        with pytest.raises(InvalidArgument) as err:
            parse_filters([{"key": "g", "op": op, "value": [*values, "one more"]}])
        assert err.value.field == "filters[0].value" and f"more than {MAX_VALUES} values" in err.value.message
    with pytest.raises(InvalidArgument) as err:  # the shorthand's list is an in list too
        parse_filters({"metadata.g": [*values, "one more"]}, "metadata")
    assert err.value.field == "metadata[0].value"
