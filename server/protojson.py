"""Proto3 JSON for Google protobuf messages, emitting exactly what `json_format.MessageToDict(message)` emits.

One exception, as the mapping allows: the usage series' points write out every scalar figure, zeros included (what
`always_print_fields_with_no_presence` would print), so a zero-filled bucket reads like any other point.

json_format walks every field through generic, per-value type dispatch in pure Python; on list responses that
dominated a read's cost. Here each message type gets a plan built once from its descriptor: a function of
straight-line code that reads each field, tests its presence by the runtime's rules and converts it with a converter
chosen from the field's type up front.

What the plan does not cover goes to json_format itself: an `Any` (its contents are resolved through the pool by
type URL) and any message with an extension set. Values json_format refuses (a NaN in `Value`, a timestamp out of
range) raise here too; `message_to_dict` then lets json_format raise its own error, so callers see exactly what they
saw before. Enum names honour the `pb.enumvalue.json` option as json_format does, if that extension is in the
default pool when a type's plan is built (nothing in this project registers it).
"""

from __future__ import annotations

import binascii
import datetime
import keyword
import math
import threading
from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor_pool, json_format
from google.protobuf.descriptor import Descriptor, EnumValueDescriptor, FieldDescriptor
from google.protobuf.internal.type_checkers import ToShortestFloat
from google.protobuf.message import Message

__all__ = ["message_to_dict", "message_to_json_object"]

_Convert = Callable[[Any], Any]

_NAN = "NaN"
_INFINITY = "Infinity"
_NEG_INFINITY = "-Infinity"
_INF = math.inf
_NEG_INF = -math.inf

_INT64_CPP_TYPES = frozenset({FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64})
_FLOAT_CPP_TYPES = frozenset({FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT})
_TO_JSON_STRING = frozenset({"google.protobuf.Duration", "google.protobuf.FieldMask"})
_TIMESTAMP_SECONDS_MIN = -62135596800  # 0001-01-01T00:00:00Z
_TIMESTAMP_SECONDS_MAX = 253402300799  # 9999-12-31T23:59:59Z
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
# Points of a zero-filled series: a client plotting them should not have to know that an absent figure means 0.
_FIGURES_ALWAYS_WRITTEN = frozenset(
    {
        "platform.metering.v1.TokenUsagePoint",
        "platform.metering.v1.CallCountPoint",
        "platform.metering.v1.ApiTrafficPoint",
    }
)
_DAYS_CACHED = 4096


class _Unsupported(Exception):
    """A value the plan has no conversion for (an extension, say): json_format converts the whole message."""


def message_to_dict(message: Message) -> Any:
    """`json_format.MessageToDict(message)`, by the compiled plan; json_format answers whatever the plan refuses."""
    try:
        return message_to_json_object(message)
    except Exception:
        # json_format then raises its own error, or answers what the plan missed.
        return json_format.MessageToDict(message)


def message_to_json_object(message: Message) -> Any:
    """The plan's conversion alone, raising where json_format would raise (tests compare it with json_format)."""
    convert = _PLANS.get(message.DESCRIPTOR)
    if convert is None:
        convert = _plan(message.DESCRIPTOR)
    return convert(message)


# Keyed by descriptor, not name: a message of the same name from another pool is another type.
_PLANS: dict[Any, _Convert] = {}  # upb's descriptors and the stubs' are distinct classes to mypy
_COMPILING: set[Any] = set()
_LOCK = threading.RLock()


def _plan(desc: Any) -> _Convert:
    with _LOCK:
        found = _PLANS.get(desc)
        if found is None:
            _COMPILING.add(desc)
            try:
                found = _compile(desc)
            finally:
                _COMPILING.discard(desc)
            _PLANS[desc] = found
        return found


def _compile(desc: Descriptor) -> _Convert:
    full_name = desc.full_name
    if desc.file.name == "google/protobuf/wrappers.proto":
        value_convert = _value_converter(desc.fields_by_name["value"])
        if value_convert is None:
            return _wrapped_value
        return lambda m: value_convert(m.value)
    if full_name == "google.protobuf.Timestamp":
        return _timestamp
    if full_name in _TO_JSON_STRING:
        return _to_json_string
    if full_name == "google.protobuf.Struct":
        return _struct
    if full_name == "google.protobuf.Value":
        return _value
    if full_name == "google.protobuf.ListValue":
        return _list_value
    if full_name == "google.protobuf.Any":
        return json_format.MessageToDict  # type: ignore[no-any-return]
    if desc.extension_ranges:
        # Extensions are invisible to attribute access: only ListFields() yields them.
        return _by_list_fields({f.number: (f.json_name, _field_converter(f)) for f in desc.fields})
    return _by_attributes(desc)


def _by_attributes(desc: Descriptor) -> _Convert:
    """Straight-line code reading each field by attribute: a third of the cost of ListFields() on upb, which builds
    a descriptor and value tuple per set field. Presence follows the runtime's rules: HasField() for fields with
    presence, a non-empty container, or a scalar other than its zero value (-0.0 counts as set, as upb and the
    wire format have it)."""
    namespace: dict[str, Any] = {"_negative_zero": _negative_zero}
    lines = ["def convert(m):", "    js = {}"]
    always = desc.full_name in _FIGURES_ALWAYS_WRITTEN
    for index, field in enumerate(sorted(desc.fields, key=lambda f: f.number)):
        convert = _field_converter(field)
        read = f"m.{field.name}" if _plain_attribute(field.name) else f"getattr(m, {field.name!r})"
        if convert is None:
            value = "v"
        else:
            namespace[f"c{index}"] = convert
            value = f"c{index}(v)"
        key = repr(field.json_name)
        if field.has_presence:
            lines += [f"    if m.HasField({field.name!r}):", f"        v = {read}", f"        js[{key}] = {value}"]
            continue
        lines.append(f"    v = {read}")
        if always and not field.is_repeated:
            lines.append(f"    js[{key}] = {value}")
        elif not field.is_repeated and field.cpp_type in _FLOAT_CPP_TYPES:
            lines.append(f"    if v or _negative_zero(v): js[{key}] = {value}")
        else:
            lines.append(f"    if v: js[{key}] = {value}")
    lines.append("    return js")
    exec("\n".join(lines), namespace)  # noqa: S102 -- code built from descriptor names and repr() literals only
    return namespace["convert"]  # type: ignore[no-any-return]


def _plain_attribute(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _negative_zero(value: float) -> bool:
    return math.copysign(1.0, value) < 0


def _wrapped_value(message: Any) -> Any:
    return message.value


def _enum_json_extension() -> Any:
    try:
        return descriptor_pool.Default().FindExtensionByName("pb.enumvalue.json")
    except KeyError:
        return None


def _by_list_fields(fields: dict[int, tuple[str, _Convert | None]]) -> _Convert:
    get = fields.get

    def convert(message: Any) -> dict[str, Any]:
        js: dict[str, Any] = {}
        for field, value in message.ListFields():
            entry = get(field.number)
            if entry is None:
                raise _Unsupported(field.full_name)
            name, field_convert = entry
            js[name] = value if field_convert is None else field_convert(value)
        return js

    return convert


def _field_converter(field: FieldDescriptor) -> _Convert | None:
    """The whole field's converter (None: the runtime's value is already its JSON value)."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return _map_converter(field.message_type)
    element = _value_converter(field)
    if field.is_repeated:
        if element is None:
            return list
        return lambda values: [element(v) for v in values]  # type: ignore[misc]
    return element


def _map_converter(entry: Descriptor) -> _Convert:
    key_field = entry.fields_by_name["key"]
    value_convert = _value_converter(entry.fields_by_name["value"])
    if key_field.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        key_convert: _Convert | None = _bool_key
    elif key_field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        key_convert = None
    else:
        key_convert = str
    if key_convert is None and value_convert is None:
        return dict
    if key_convert is None:
        return lambda m: {k: value_convert(v) for k, v in m.items()}  # type: ignore[misc]
    if value_convert is None:
        return lambda m: {key_convert(k): v for k, v in m.items()}
    return lambda m: {key_convert(k): value_convert(v) for k, v in m.items()}


def _bool_key(key: bool) -> str:
    return "true" if key else "false"


def _value_converter(field: FieldDescriptor) -> _Convert | None:
    """One value's converter (None: the runtime's value is already its JSON value)."""
    cpp_type = field.cpp_type
    if cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        sub = field.message_type
        if sub in _COMPILING:
            # A recursive type: its plan exists only once this compile returns.
            return lambda message: _PLANS[sub](message)  # noqa: PLW0108 -- looked up once the plan exists
        return _PLANS.get(sub) or _plan(sub)
    if cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        return _enum_converter(field.enum_type)
    if cpp_type == FieldDescriptor.CPPTYPE_STRING:
        return _bytes if field.type == FieldDescriptor.TYPE_BYTES else None
    if cpp_type in _INT64_CPP_TYPES:
        return str
    if cpp_type == FieldDescriptor.CPPTYPE_DOUBLE:
        return _double
    if cpp_type == FieldDescriptor.CPPTYPE_FLOAT:
        return _float
    # int32, uint32 and bool: the runtime's int and bool are their JSON values.
    return None


def _enum_converter(enum: Any) -> _Convert:
    if enum.full_name == "google.protobuf.NullValue":
        return _null
    names = {number: _enum_value_name(value) for number, value in enum.values_by_number.items()}
    if enum.is_closed:

        def closed(number: int) -> str:
            # An unknown number raises KeyError, as json_format refuses it for a closed enum.
            return names[number]

        return closed
    get = names.get
    return lambda number: get(number, number)


def _enum_value_name(value: EnumValueDescriptor) -> str:
    """The value's name, or the JSON name its `pb.enumvalue.json` option gives, which json_format honours when
    that extension is in the default pool."""
    extension = _enum_json_extension()
    if extension is not None:
        options = value.GetOptions()
        if options.HasExtension(extension):
            return str(options.Extensions[extension].string)
    return value.name


def _null(_: object) -> None:
    return None


def _bytes(value: bytes) -> str:
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def _double(value: float) -> float | str:
    if value != value:  # noqa: PLR0124 -- NaN is the one float unequal to itself
        return _NAN
    if value == _INF:
        return _INFINITY
    if value == _NEG_INF:
        return _NEG_INFINITY
    return value


def _float(value: float) -> float | str:
    if value != value:  # noqa: PLR0124 -- NaN is the one float unequal to itself
        return _NAN
    if value == _INF:
        return _INFINITY
    if value == _NEG_INF:
        return _NEG_INFINITY
    # A float field holds a 4-byte float widened to double: json_format prints the shortest decimal that
    # round-trips through 4 bytes, so 0.1 stays 0.1 rather than 0.10000000149011612.
    return ToShortestFloat(value)


def _to_json_string(message: Any) -> str:
    return message.ToJsonString()  # type: ignore[no-any-return]


_DAYS: dict[int, str] = {}


def _timestamp(message: Any) -> str:
    """Timestamp.ToJsonString()'s text (RFC 3339, Z, 0, 3, 6 or 9 fractional digits) at under half its cost: the
    date of a day is computed once (timestamps in a response cluster on few days), the time of day by arithmetic."""
    seconds = message.seconds
    nanos = message.nanos
    if not (_TIMESTAMP_SECONDS_MIN <= seconds <= _TIMESTAMP_SECONDS_MAX and 0 <= nanos < 1_000_000_000):
        return _to_json_string(message)  # raises the runtime's own error
    days, second_of_day = divmod(seconds, 86_400)
    day = _DAYS.get(days)
    if day is None:
        if len(_DAYS) >= _DAYS_CACHED:
            _DAYS.clear()
        day = _DAYS[days] = datetime.date.fromordinal(_EPOCH_ORDINAL + days).isoformat()
    hours, second_of_hour = divmod(second_of_day, 3600)
    minutes, secs = divmod(second_of_hour, 60)
    if nanos == 0:
        return f"{day}T{hours:02d}:{minutes:02d}:{secs:02d}Z"
    if nanos % 1_000_000 == 0:
        return f"{day}T{hours:02d}:{minutes:02d}:{secs:02d}.{nanos // 1_000_000:03d}Z"
    if nanos % 1_000 == 0:
        return f"{day}T{hours:02d}:{minutes:02d}:{secs:02d}.{nanos // 1_000:06d}Z"
    return f"{day}T{hours:02d}:{minutes:02d}:{secs:02d}.{nanos:09d}Z"


def _struct(message: Any) -> dict[str, Any]:
    return {key: _value(value) for key, value in message.fields.items()}


def _list_value(message: Any) -> list[Any]:
    return [_value(value) for value in message.values]


def _value(message: Any) -> Any:
    which = message.WhichOneof("kind")
    if which is None or which == "null_value":
        return None
    if which == "number_value":
        number = message.number_value
        if math.isinf(number) or math.isnan(number):
            # JSON would read it back as a string_value: json_format refuses it.
            raise ValueError("Value.number_value cannot be NaN or infinite")
        return number
    if which == "string_value":
        return message.string_value
    if which == "bool_value":
        return message.bool_value
    if which == "struct_value":
        return _struct(message.struct_value)
    if which == "list_value":
        return _list_value(message.list_value)
    raise _Unsupported(f"google.protobuf.Value.{which}")
