"""Tool schemas from MCP servers, vetted before anything uses them and applied without backtracking.

An MCP server is tenant-registered, so its `inputSchema`/`outputSchema` are untrusted input. Python's `re` (what the
`jsonschema` package runs `pattern`, `patternProperties` and `additionalProperties` with) backtracks: `^(a+)+$` against
34 `a`s and a `!` held a gateway worker's event loop for minutes. Schemas are therefore applied with jsonschema-rs and
its linear-time `regex` engine (RegexOptions): matching costs time in proportion to the text, whatever the pattern.

`vet(schema)` decides once per distinct schema (cached) whether it can be used:
- bounded first: at most `MAX_SCHEMA_DEPTH` levels of nesting and `MAX_SCHEMA_BYTES` as JSON;
- no cycle of `$ref`s (or of `allOf`/`anyOf`/`oneOf`/`not`/`if`/`then`/`else`/`dependentSchemas` through them) that
  never moves into the value: such a schema says nothing and recursed without end in the old validator (a 500);
- no blow-up: `{"allOf": [{"properties": {"x": {"$ref": "#"}}}, {"properties": {"x": {"$ref": "#"}}}]}` applies
  itself 2^n times to a value n levels deep (seconds at n=15, minutes at 18) with no regex at all; a schema that may
  apply more than a bounded number of subschemas to one value is refused (server.mcp._schema_graph);
- every `pattern` must compile in the linear-time engine: backreferences and lookaround do not, and are refused rather
  than run by a backtracking engine;
- a network `$ref` is never fetched (it would go around the egress guard, and SEP-2106 forbids dereferencing them):
  that part of the schema accepts anything here, and the server validates it.
A schema that is otherwise not valid JSON Schema is passed through unvalidated (`validator` None): the server
validates what we cannot. A refused schema carries a `refusal` naming the problem, for the model and the client.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
import orjson

from server.input_bounds import value_depth
from server.mcp._schema_graph import SchemaGraph

__all__ = ["MAX_ARGUMENT_DEPTH", "MAX_SCHEMA_BYTES", "MAX_SCHEMA_DEPTH", "ToolSchema", "problems", "vet"]

# Real tool schemas nest a few objects deep (OpenAI's structured outputs allow 10 levels); 32 JSON levels leave room
# while keeping a listing item that carries the schema well inside the gateway's 64-level request bound.
MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_BYTES = 128 * 1024
MAX_ARGUMENT_DEPTH = 32
# Compiled size of one pattern: far above any real one, far below what a `(a{100}){100}` expansion asks for.
_REGEX_BYTES = 1024 * 1024
_MAX_PROBLEMS = 5


@dataclass(frozen=True)
class ToolSchema:
    validator: jsonschema_rs.Validator | None  # None: not valid JSON Schema, or refused
    refusal: str | None = None  # why the schema cannot be used, for the model and the client


def vet(schema: Any) -> ToolSchema:
    if not isinstance(schema, dict):
        return ToolSchema(None, "its schema is not a JSON object")
    try:
        text = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # orjson refuses past 254 levels, far beyond the bound below
        return ToolSchema(None, f"its schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if len(text) > MAX_SCHEMA_BYTES:
        return ToolSchema(None, f"its schema is larger than {MAX_SCHEMA_BYTES // 1024} KiB")
    return _vetted(text)


@functools.lru_cache(maxsize=1024)
def _vetted(text: str) -> ToolSchema:
    """Once per distinct schema and process: a server's schemas rarely change, and building a validator costs more
    than using it."""
    schema = orjson.loads(text)
    if value_depth(schema) > MAX_SCHEMA_DEPTH:
        return ToolSchema(None, f"its schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    try:
        validator = jsonschema_rs.validator_for(
            schema,
            retriever=_no_fetch,
            validate_formats=False,  # `format` annotates (as in 2020-12 and the validator before this one)
            pattern_options=jsonschema_rs.RegexOptions(size_limit=_REGEX_BYTES, dfa_size_limit=_REGEX_BYTES),
        )
    except jsonschema_rs.ValidationError as exc:  # the schema breaks its metaschema
        if isinstance(exc.kind, jsonschema_rs.ValidationErrorKind.Format) and exc.kind.format == "regex":
            return ToolSchema(
                None,
                f"the regular expression at {_pointer(exc.instance_path)} uses features the gateway does not run "
                "(backreferences, lookaround) or is too large",
            )
        return ToolSchema(None)  # the server validates what we cannot
    except (jsonschema_rs.ReferencingError, ValueError):
        return ToolSchema(None)
    # Only now: the build checked the schema against its metaschema and resolved each `$ref`, so the graph is made
    # of well-formed `$id`s and `$ref`s only.
    refusal = SchemaGraph(schema).refusal(MAX_ARGUMENT_DEPTH)
    return ToolSchema(None, refusal) if refusal is not None else ToolSchema(validator)


def _no_fetch(uri: str) -> dict[str, Any]:
    """A network `$ref` is never fetched: that part accepts anything here (the server still validates it)."""
    return {}


def problems(vetted: ToolSchema, value: Any) -> list[str]:
    """What is wrong with `value` under a usable schema, at most a few lines, each naming where."""
    if vetted.validator is None:
        return []
    if value_depth(value) > MAX_ARGUMENT_DEPTH:
        return [f"(arguments): nested deeper than {MAX_ARGUMENT_DEPTH} levels"]
    found = sorted(vetted.validator.iter_errors(value), key=lambda e: [str(p) for p in e.instance_path])
    return [f"{'/'.join(str(p) for p in e.instance_path) or '(arguments)'}: {e.message}" for e in found][:_MAX_PROBLEMS]


def _pointer(path: list[str | int]) -> str:
    return "#/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)
