"""How a JSON Schema applies its subschemas, for server.mcp.tool_schemas: what makes validation loop or blow up.

A subschema applies either to the same value (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
`dependentSchemas`, and `$ref`s, resolved within the document by `referencing` and never fetched: "in place") or to a
value one level down (`properties`, `items`, …: "descending"). Two shapes make a validator misbehave:
- a cycle of in-place edges: the validator applies the same subschemas to the same value for ever;
- fan-out: in-place edges that reach the same subschema by many paths, or several descending edges that reach one
  value below, multiply; over n levels that is exponential (`allOf` of two `{"properties": {"x": {"$ref": "#"}}}`
  applies the root 2^n times to a value n levels down).
`SchemaGraph.refusal` finds both, and bounds its own work: a schema too involved to check is refused as well.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

__all__ = ["SchemaGraph"]

MAX_APPLICATIONS = 1000  # subschemas applied to one value: real schemas apply tens
_MAX_REF_HOPS = 100  # in-place hops in one chain (bounds the searches' recursion too)
_MAX_STEPS = 500_000  # the analysis' own work, so a crafted schema cannot stall it either

_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")  # draft 7's `dependencies` holds schemas or name lists
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# Where subschemas are, by keyword, across drafts (2020-12, 2019-09, 7, 6, 4).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_ONE = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "contentSchema",
    }
)
# Descending keywords that apply to any member of an object / any item of an array.
_ANY_MEMBER = ("patternProperties", "additionalProperties", "unevaluatedProperties", "propertyNames")
_ANY_ITEM = ("additionalItems", "unevaluatedItems", "contains")

Node = dict[str, Any]
Slot = tuple[str, str | int | None]  # ("member", name) / ("item", index); None: any member / any item


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


class SchemaGraph:
    def __init__(self, schema: Node) -> None:
        self._schema = schema  # keeps every node alive: nodes are known by id()
        dialect = schema.get("$schema")
        self._spec = specification_with(dialect, default=DRAFT202012) if isinstance(dialect, str) else DRAFT202012
        self._in_place: dict[int, list[tuple[Node, str | None]]] = {}  # node -> (subschema, the $ref that named it)
        self._expansions: dict[int, dict[int, tuple[Node, int]]] = {}
        self._belows: dict[int, list[tuple[Slot, Node, int]]] = {}
        self._applications: dict[tuple[int, int], int] = {}
        self._steps = 0

    def refusal(self, max_depth: int) -> str | None:
        """Why the schema cannot be used (a cycle, a blow-up over values up to `max_depth` levels deep), or None."""
        try:
            self._find_cycles()
            self._expansion(self._schema)
            for depth in range(1, max_depth + 1):
                if not self._applied(self._schema, depth):
                    break  # nothing applies at this depth, so nothing deeper either
        except _Refused as refused:
            return refused.reason
        return None

    def _step(self, count: int = 1) -> None:
        self._steps += count
        if self._steps > _MAX_STEPS:
            raise _Refused("its schema is too involved to check")

    def _find_cycles(self) -> None:
        """Depth-first over in-place edges from every subschema, each finished once (linear work); records them."""
        root = Registry().resolver_with_root(self._spec.create_resource(self._schema))
        chain: dict[int, str | None] = {}  # the current in-place chain -> the $ref that reached each

        def visit(node: Node, resolver: Any, ref: str | None) -> None:
            self._step()
            if id(node) in chain:
                hops = [r for r in [*list(chain.values())[list(chain).index(id(node)) + 1 :], ref] if r is not None]
                raise _Refused("its schema has a $ref cycle that never reaches a value: " + " -> ".join(hops))
            if id(node) in self._in_place:
                return
            if len(chain) >= _MAX_REF_HOPS:
                raise _Refused(f"its schema chains more than {_MAX_REF_HOPS} $refs")
            chain[id(node)] = ref
            edges = self._edges(node, resolver)
            for sub, sub_ref, sub_resolver in edges:
                visit(sub, sub_resolver, sub_ref)
            self._in_place[id(node)] = [(sub, sub_ref) for sub, sub_ref, _ in edges]
            del chain[id(node)]

        for node in _every_subschema(self._schema):
            visit(node, root, None)

    def _edges(self, node: Node, resolver: Any) -> list[tuple[Node, str | None, Any]]:
        if isinstance(node.get("$id"), str) or isinstance(node.get("id"), str):  # its $refs resolve against its URI
            with contextlib.suppress(AttributeError, TypeError, ValueError):  # an `id` that is not one in this draft
                resolver = resolver.in_subresource(Resource.from_contents(node, default_specification=self._spec))
        edges: list[tuple[Node, str | None, Any]] = [(sub, None, resolver) for sub in _in_place(node)]
        for key in _REFS:
            target = node.get(key)
            if isinstance(target, str):
                try:
                    resolved = resolver.lookup(target)
                except Unresolvable:
                    continue  # a network $ref: nothing of ours to follow
                if isinstance(resolved.contents, dict):
                    edges.append((resolved.contents, target, resolved.resolver))
        return edges

    def _expansion(self, node: Node) -> dict[int, tuple[Node, int]]:
        """Every subschema applied in place when `node` applies (itself included), with how many times."""
        known = self._expansions.get(id(node))
        if known is not None:
            return known
        found: dict[int, tuple[Node, int]] = {id(node): (node, 1)}
        for sub, _ref in self._in_place.get(id(node), ()):
            for key, (each, times) in self._expansion(sub).items():
                self._step()
                found[key] = (each, found[key][1] + times if key in found else times)
        if sum(times for _, times in found.values()) > MAX_APPLICATIONS:
            raise _Refused(f"its schema applies more than {MAX_APPLICATIONS} subschemas to one value")
        self._expansions[id(node)] = found
        return found

    def _below(self, node: Node) -> list[tuple[Slot, Node, int]]:
        """What applies one level down when `node` applies: (which member or item, subschema, how many times)."""
        known = self._belows.get(id(node))
        if known is None:
            known = [
                (slot, sub, times) for each, times in self._expansion(node).values() for slot, sub in _descending(each)
            ]
            self._step(len(known) + 1)
            self._belows[id(node)] = known
        return known

    def _applied(self, node: Node, depth: int) -> int:
        """The most subschemas applied to one value `depth` levels below a value `node` applies to."""
        if depth == 0:
            return sum(times for _, times in self._expansion(node).values())
        known = self._applications.get((id(node), depth))
        if known is not None:
            return known
        named: dict[Slot, int] = {}
        anywhere = {"member": 0, "item": 0}
        for (kind, key), sub, times in self._below(node):
            if depth > 1 and not self._below(sub):
                continue  # nothing of it reaches that deep
            self._step()
            count = times * self._applied(sub, depth - 1)
            if key is None:
                anywhere[kind] += count
            else:
                named[(kind, key)] = named.get((kind, key), 0) + count
        most = max([*anywhere.values(), *(count + anywhere[kind] for (kind, _), count in named.items())])
        if most > MAX_APPLICATIONS:
            raise _Refused(f"its schema applies more than {MAX_APPLICATIONS} subschemas to one value")
        self._applications[(id(node), depth)] = most
        return most


def _every_subschema(schema: Node) -> Iterator[Node]:
    """Every subschema of the document, found by keyword (a `properties` map or an `enum` value is not one)."""
    pending: list[Node] = [schema]
    while pending:
        node = pending.pop()
        yield node
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                pending.extend(v for v in value.values() if isinstance(v, dict))
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                pending.extend(v for v in value if isinstance(v, dict))
            elif key in _SCHEMA_ONE and isinstance(value, dict):
                pending.append(value)


def _in_place(node: Node) -> Iterator[Node]:
    for key in _IN_PLACE_ONE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _IN_PLACE_LIST:
        if isinstance(node.get(key), list):
            yield from (v for v in node[key] if isinstance(v, dict))
    for key in _IN_PLACE_MAP:
        if isinstance(node.get(key), dict):
            yield from (v for v in node[key].values() if isinstance(v, dict))


def _descending(node: Node) -> Iterator[tuple[Slot, Node]]:
    """The subschemas `node` applies to values one level down, with which member or item each reaches."""
    properties = node.get("properties")
    if isinstance(properties, dict):
        yield from ((("member", name), sub) for name, sub in properties.items() if isinstance(sub, dict))
    for key in _ANY_MEMBER:
        value = node.get(key)
        if isinstance(value, dict):
            subs = value.values() if key == "patternProperties" else [value]
            yield from ((("member", None), sub) for sub in subs if isinstance(sub, dict))
    for key in ("prefixItems", "items"):  # before 2020-12 an `items` array is what `prefixItems` is now
        value = node.get(key)
        if isinstance(value, list):
            yield from ((("item", index), sub) for index, sub in enumerate(value) if isinstance(sub, dict))
        elif key == "items" and isinstance(value, dict):
            yield ("item", None), value
    for key in _ANY_ITEM:
        if isinstance(node.get(key), dict):
            yield ("item", None), node[key]
