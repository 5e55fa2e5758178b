"""Find an enum field holding a number its enum does not define, anywhere in a decoded request.

Proto3 enums are open: the binary runtime keeps any number it reads (`role: 99`), and protobuf JSON accepts a
number (`"role": 99`) as well as a name. Handlers that map a number to a domain value would then either fail late
or quietly treat it as a default, so every request is checked once, right after decoding, for every protocol
(server.codecs). A number the contract does not define is refused; UNSPECIFIED (0) is defined, and whether a field
may be left unspecified is the domain's rule.

Each message type gets a plan built once from its descriptor: the enum fields it holds and the message fields that
can lead to one. A type that cannot reach an enum costs one dictionary lookup. Well-known types are not walked:
their only enum is `NullValue`, which the runtime already keeps to its single value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = ["UndefinedEnum", "find_undefined_enum"]


@dataclass(frozen=True)
class UndefinedEnum:
    """Where an undefined number was found: the field's JSON path (`grants[1].kind`), the number and the enum."""

    path: str
    number: int
    enum_name: str
    allowed: tuple[str, ...]

    def message(self) -> str:
        return f"{self.path}: {self.number} is not a value of {self.enum_name} (one of {', '.join(self.allowed)})"


# A plan reads one message and returns the first undefined enum below it, its path relative to the message.
_Plan = Callable[[Any], UndefinedEnum | None]

_PLANS: dict[Any, _Plan | None] = {}
_LOCK = threading.RLock()


def find_undefined_enum(message: Any) -> UndefinedEnum | None:
    """The first enum field in `message` (at any depth) whose number its enum does not define, or None."""
    desc = message.DESCRIPTOR
    try:
        plan = _PLANS[desc]
    except KeyError:
        plan = _plan(desc)
    return None if plan is None else plan(message)


def _plan(desc: Descriptor) -> _Plan | None:
    with _LOCK:
        if desc not in _PLANS:
            # Whether a type can reach an enum is a property of the type alone, so one walk from any root settles
            # every type it meets. Plans look up the plans of nested messages when they run, so recursive types
            # need no ordering here.
            reaching = _types_reaching_enums(desc)
            for found in reaching - _PLANS.keys():
                _PLANS[found] = _compile(found, reaching)
            _PLANS.setdefault(desc, None)
        return _PLANS[desc]


def _walked(desc: Descriptor) -> bool:
    return not desc.full_name.startswith("google.protobuf.")


def _types_reaching_enums(root: Descriptor) -> set[Descriptor]:
    """Every message type reachable from `root` (itself included) from which an enum field can be reached."""
    edges: dict[Descriptor, list[Descriptor]] = {}
    has_enum: set[Descriptor] = set()
    pending = [root]
    while pending:
        desc = pending.pop()
        if desc in edges or not _walked(desc):
            continue
        edges[desc] = []
        for field in desc.fields:
            if field.enum_type is not None:
                has_enum.add(desc)
            elif field.message_type is not None:
                edges[desc].append(field.message_type)
                pending.append(field.message_type)
    reaching = set(has_enum)
    changed = True
    while changed:  # a fixed point: a type reaches an enum if any type it holds does
        changed = False
        for desc, targets in edges.items():
            if desc not in reaching and any(t in reaching for t in targets):
                reaching.add(desc)
                changed = True
    return reaching


def _compile(desc: Descriptor, reaching: set[Descriptor]) -> _Plan:
    checks: list[_Plan] = []
    for field in desc.fields:
        if field.enum_type is not None:
            checks.append(_enum_check(field))
        elif field.message_type is not None and field.message_type in reaching:
            checks.append(_message_check(field))

    def plan(message: Any) -> UndefinedEnum | None:
        for check in checks:
            found = check(message)
            if found is not None:
                return found
        return None

    return plan


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _enum_check(field: FieldDescriptor) -> _Plan:
    enum: Any = field.enum_type
    defined = frozenset(enum.values_by_number)
    allowed = tuple(value.name for value in enum.values)
    name, json_name = field.name, field.json_name

    def undefined(number: int, path: str) -> UndefinedEnum:
        return UndefinedEnum(path, number, enum.full_name, allowed)

    if field.is_repeated:

        def repeated(message: Any) -> UndefinedEnum | None:
            for index, number in enumerate(getattr(message, name)):
                if number not in defined:
                    return undefined(number, f"{json_name}[{index}]")
            return None

        return repeated

    def single(message: Any) -> UndefinedEnum | None:
        number = getattr(message, name)
        return None if number in defined else undefined(number, json_name)

    return single


def _message_check(field: FieldDescriptor) -> _Plan:
    name, json_name = field.name, field.json_name
    if _is_map(field):
        entry: Any = field.message_type
        enum: Any = entry.fields_by_name["value"].enum_type
        if enum is not None:
            defined = frozenset(enum.values_by_number)
            allowed = tuple(value.name for value in enum.values)

            def enum_map(message: Any) -> UndefinedEnum | None:
                for key, number in getattr(message, name).items():
                    if number not in defined:
                        return UndefinedEnum(f"{json_name}[{key!r}]", number, enum.full_name, allowed)
                return None

            return enum_map

        def message_map(message: Any) -> UndefinedEnum | None:
            for key, value in getattr(message, name).items():
                found = find_undefined_enum(value)
                if found is not None:
                    return _under(f"{json_name}[{key!r}]", found)
            return None

        return message_map
    if field.is_repeated:

        def repeated(message: Any) -> UndefinedEnum | None:
            for index, value in enumerate(getattr(message, name)):
                found = find_undefined_enum(value)
                if found is not None:
                    return _under(f"{json_name}[{index}]", found)
            return None

        return repeated

    def single(message: Any) -> UndefinedEnum | None:
        if not message.HasField(name):
            return None
        found = find_undefined_enum(getattr(message, name))
        return None if found is None else _under(json_name, found)

    return single


def _under(prefix: str, found: UndefinedEnum) -> UndefinedEnum:
    return UndefinedEnum(f"{prefix}.{found.path}", found.number, found.enum_name, found.allowed)
