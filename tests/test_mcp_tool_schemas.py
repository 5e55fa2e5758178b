"""server.mcp.tool_schemas: untrusted tool schemas are bounded, cycle-checked and applied without backtracking.

The backtracking cases below took Python's `re` minutes (each added character doubles it); here they are plain
checks, bounded by the suite's per-test timeout, never by a timed assertion."""

from __future__ import annotations

from typing import Any

import pytest

from server.mcp.tool_schemas import MAX_ARGUMENT_DEPTH, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, problems, vet

EVIL = "^(a+)+$"
ATTACK = "a" * 34 + "!"


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@pytest.mark.parametrize(
    ("schema", "value", "where"),
    [
        ({"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}}, {"s": ATTACK}, "s: "),
        ({"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}, {ATTACK[:-1]: "x", ATTACK: 1}, "a"),
        (
            {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False},
            {ATTACK: 1},
            "(arguments): ",
        ),
        (
            {"type": "object", "allOf": [{"patternProperties": {EVIL: {}}}], "unevaluatedProperties": False},
            {ATTACK: 1},
            "(arguments): ",
        ),
        ({"type": "object", "propertyNames": {"pattern": EVIL}}, {ATTACK: 1}, "(arguments): "),
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"s": {"pattern": EVIL}}},
            {"s": ATTACK},
            "s: ",
        ),
    ],
)
def test_backtracking_patterns_are_matched_in_linear_time(schema: dict[str, Any], value: Any, where: str) -> None:
    vetted = vet(schema)
    assert vetted.refusal is None and vetted.validator is not None
    found = problems(vetted, value)
    assert found and found[0].startswith(where), found


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (
            {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
            "$ref cycle that never reaches a value: #/$defs/a",
        ),
        ({"allOf": [{"$ref": "#"}]}, "$ref cycle that never reaches a value: #"),
        (
            {"properties": {"x": {"$ref": "#/$defs/b"}}, "$defs": {"b": {"anyOf": [{"not": {"$ref": "#/$defs/b"}}]}}},
            ": #/$defs/b",
        ),
        (
            {"$id": "https://schemas.example.test/root", "$defs": {"a": {"$id": "a", "$ref": "root"}}, "$ref": "a"},
            ": a -> root",
        ),
        (
            {
                "$defs": {**{f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(150)}, "d150": {}},
                "$ref": "#/$defs/d0",
            },
            "chains more",
        ),
        (_nested(MAX_SCHEMA_DEPTH), f"nests deeper than {MAX_SCHEMA_DEPTH} levels"),
        ({"enum": ["x" * MAX_SCHEMA_BYTES]}, "larger than 128 KiB"),
        ({"properties": {"s": {"pattern": "(a)\\1"}}}, "regular expression at #/properties/s/pattern"),
        ({"patternProperties": {"(?<!x)y": {}}}, "regular expression at #/patternProperties/(?<!x)y"),
        ({"properties": {"s": {"pattern": "((a{100}){100}){100}"}}}, "or is too large"),
        ([], "not a JSON object"),
        # Blow-ups without a regex: 2^n applications of the root to a value n levels down, or of a leaf in place.
        (
            {"allOf": [{"properties": {"x": {"$ref": "#"}}}, {"properties": {"x": {"$ref": "#"}}}]},
            "applies more than 1000 subschemas to one value",
        ),
        (
            {
                "$defs": {
                    **{
                        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                        for i in range(12)
                    },
                    "d12": {"type": "string"},
                },
                "$ref": "#/$defs/d0",
            },
            "applies more than 1000 subschemas to one value",
        ),
        (
            {"properties": {"x": {"$ref": "#"}}, "patternProperties": {"^x": {"$ref": "#"}}},
            "applies more than 1000 subschemas to one value",
        ),
    ],
)
def test_unusable_schemas_are_refused_naming_why(schema: Any, named: str) -> None:
    vetted = vet(schema)
    assert vetted.validator is None and vetted.refusal is not None and named in vetted.refusal, vetted.refusal
    assert problems(vetted, {}) == []  # a refused schema checks nothing: its calls are refused before


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"$ref": "#"}},  # recursion that moves into the value is fine
        {"$defs": {"tree": {"properties": {"kids": {"items": {"$ref": "#/$defs/tree"}}}}}, "$ref": "#/$defs/tree"},
        {"properties": {"profile": {"$ref": "https://schemas.example.test/profile.json"}}},  # not followed, not fetched
        {"enum": [{"$ref": "#"}], "const": {"allOf": [{"$ref": "#"}]}},  # values, not schemas
        _nested(MAX_SCHEMA_DEPTH // 2 - 1),
        {"type": "object", "properties": {"id": {"type": "string"}, "$id": {"type": "string"}, "$ref": {}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"id": {"type": "string"}}},
        # An expression grammar: recursive through several alternatives, each recursion into a different member.
        {
            "$defs": {
                "e": {
                    "anyOf": [
                        {"type": "number"},
                        {
                            "properties": {
                                "op": {"enum": ["+", "-"]},
                                "left": {"$ref": "#/$defs/e"},
                                "right": {"$ref": "#/$defs/e"},
                            }
                        },
                        {"properties": {"fn": {"type": "string"}, "args": {"items": {"$ref": "#/$defs/e"}}}},
                    ]
                }
            },
            "properties": {"expr": {"$ref": "#/$defs/e"}},
        },
        {"properties": {"pick": {"anyOf": [{"properties": {f"p{j}": {"type": "string"} for j in range(9)}}] * 100}}},
    ],
)
def test_recursive_but_well_founded_schemas_are_used(schema: dict[str, Any]) -> None:
    vetted = vet(schema)
    assert vetted.refusal is None and vetted.validator is not None


def test_arguments_nested_too_deep_are_refused_and_deep_recursion_is_checked() -> None:
    vetted = vet({"type": "array", "items": {"$ref": "#"}})
    value: list[Any] = []
    for _ in range(MAX_ARGUMENT_DEPTH - 1):
        value = [value]
    assert problems(vetted, value) == []  # exactly at the bound
    assert problems(vetted, [value]) == [f"(arguments): nested deeper than {MAX_ARGUMENT_DEPTH} levels"]
    assert problems(vet({"type": "array", "items": {"$ref": "#"}}), [[["x"]]]) == ['0/0/0: "x" is not of type "array"']


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "objec"},
        {"$schema": 5},
        {"$id": 5, "$ref": "#"},
        {"$ref": "#/definitions/0/x", "definitions": [1]},
        {"$ref": "#/properties/a/x", "properties": {"a": True}},
        {"properties": {"x": {"$ref": "#/$defs/missing"}}},
    ],
)
def test_a_schema_that_is_not_json_schema_is_left_to_the_server(schema: dict[str, Any]) -> None:
    vetted = vet(schema)
    assert vetted.validator is None and vetted.refusal is None
    assert problems(vetted, {"anything": 1}) == []
