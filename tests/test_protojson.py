"""The compiled JSON encoder against json_format itself: for every message type in gen/ and for a coverage schema
with what gen/ lacks (every scalar type, every map key type, closed enums, extensions, recursion, custom JSON names,
keyword field names, every well-known type), many populated instances must encode to the same bytes as
`orjson.dumps(json_format.MessageToDict(m))`, and fail where json_format fails.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import random
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from google.protobuf import (  # the well-known types the coverage schema imports must be in the pool
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    json_format,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import gen.platform
from server import protojson
from server.codecs import JsonCodec
from server.protojson import message_to_dict, message_to_json_object

SEEDS = 40
MAX_DEPTH = 3

F = FieldDescriptor
_INT32 = [0, 1, -1, 7, 2**31 - 1, -(2**31)]
_UINT32 = [0, 1, 2**32 - 1]
_INT64 = [0, 1, -1, 2**53 + 1, 2**63 - 1, -(2**63)]
_UINT64 = [0, 1, 2**53 + 1, 2**64 - 1]
_DOUBLE = [0.0, -0.0, 1.5, -2.25, 0.1, 1e300, -1e-300, 5e-324, 2.0**53, math.nan, math.inf, -math.inf]
_FLOAT = [0.0, -0.0, 0.1, 1.5, -3.25, 3.4e38, 1e-45, 16777217.0, math.nan, math.inf, -math.inf]
_STRINGS = ["", "a", "group-07", "héllo ✓ 𝄞 日本", '"quoted"\\\n\t', "\x00\x1f", "x" * 300]
_BYTES = [b"", b"\x00", b"\xff\xfe\x00", bytes(range(256)), b"ab", b"abc"]
_TIMESTAMP_SECONDS = [0, 1, -1, 1_700_000_000, -62135596800, 253402300799]
_NANOS = [0, 1, 1_000, 1_000_000, 999_999_999, 500_000_000, 123_456_789]
_DURATION_SECONDS = [0, 1, 59, 86_400, 315_576_000_000]

_SCALARS: dict[int, list[Any]] = {
    F.TYPE_INT32: _INT32,
    F.TYPE_SINT32: _INT32,
    F.TYPE_SFIXED32: _INT32,
    F.TYPE_UINT32: _UINT32,
    F.TYPE_FIXED32: _UINT32,
    F.TYPE_INT64: _INT64,
    F.TYPE_SINT64: _INT64,
    F.TYPE_SFIXED64: _INT64,
    F.TYPE_UINT64: _UINT64,
    F.TYPE_FIXED64: _UINT64,
    F.TYPE_DOUBLE: _DOUBLE,
    F.TYPE_FLOAT: _FLOAT,
    F.TYPE_BOOL: [True, False],
    F.TYPE_STRING: _STRINGS,
    F.TYPE_BYTES: _BYTES,
}


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _scalar(field: FieldDescriptor, rng: random.Random) -> Any:
    if field.type == F.TYPE_ENUM:
        numbers = [value.number for value in field.enum_type.values]
        if not field.enum_type.is_closed:
            numbers.append(rng.choice([12345, -7]))  # an open enum keeps unknown numbers
        return rng.choice(numbers)
    return rng.choice(_SCALARS[field.type])


def _populate_wkt(message: Any, rng: random.Random, depth: int) -> bool:
    """Fill a well-known type; False when `message` is not one."""
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Timestamp":
        message.seconds = rng.choice(_TIMESTAMP_SECONDS)
        message.nanos = rng.choice(_NANOS)
    elif name == "google.protobuf.Duration":
        seconds, nanos = rng.choice(_DURATION_SECONDS), rng.choice(_NANOS)
        sign = rng.choice([1, -1])
        message.seconds, message.nanos = sign * seconds, sign * nanos
    elif name == "google.protobuf.FieldMask":
        message.paths.extend(rng.sample(["id", "display_name", "spec.max_tokens", "a_b_c"], rng.randint(0, 3)))
    elif name == "google.protobuf.Struct":
        message.update(_json_object(rng, depth))
    elif name == "google.protobuf.ListValue":
        message.extend(_json_list(rng, depth))
    elif name == "google.protobuf.Value":
        _populate_value(message, rng, depth)
    elif name == "google.protobuf.Any":
        if rng.random() < 0.8:
            inner = timestamp_pb2.Timestamp(seconds=rng.choice(_TIMESTAMP_SECONDS), nanos=rng.choice(_NANOS))
            message.Pack(inner)
    elif name == "google.protobuf.Empty":
        pass
    elif message.DESCRIPTOR.file.name == "google/protobuf/wrappers.proto":
        message.value = _scalar(message.DESCRIPTOR.fields_by_name["value"], rng)
    else:
        return False
    return True


def _json_scalar(rng: random.Random) -> Any:
    # Struct values are JSON: numbers must be finite (NaN in a Value is tested on its own).
    return rng.choice([None, True, False, 0, -1, 2.5, 1e300, "", "ünï", "12"])


def _json_object(rng: random.Random, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(rng.randint(0, 4)):
        key = rng.choice(["k", "", "ключ", f"key{i}", "with space"])
        out[key] = _json_any(rng, depth + 1)
    return out


def _json_list(rng: random.Random, depth: int) -> list[Any]:
    return [_json_any(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _json_any(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth < MAX_DEPTH and roll < 0.2:
        return _json_object(rng, depth)
    if depth < MAX_DEPTH and roll < 0.35:
        return _json_list(rng, depth)
    return _json_scalar(rng)


def _populate_value(message: Any, rng: random.Random, depth: int) -> None:
    kind = rng.choice(["unset", "null", "number", "string", "bool", "struct", "list"])
    if kind == "null":
        message.null_value = 0
    elif kind == "number":
        message.number_value = rng.choice([0.0, -1.5, 3.0, 1e-300])
    elif kind == "string":
        message.string_value = rng.choice(_STRINGS)
    elif kind == "bool":
        message.bool_value = rng.choice([True, False])
    elif kind == "struct":
        message.struct_value.update(_json_object(rng, depth))
    elif kind == "list":
        message.list_value.extend(_json_list(rng, depth))


def populate(message: Any, rng: random.Random, depth: int = 0, *, everything: bool = False) -> None:
    """Set a random selection of fields (all of them with `everything`) to values drawn from edge-case pools."""
    if _populate_wkt(message, rng, depth):
        return
    desc: Descriptor = message.DESCRIPTOR
    chosen_oneof_members = {
        oneof.name: rng.choice([*oneof.fields, None]) for oneof in desc.oneofs if not _synthetic(oneof)
    }
    for field in desc.fields:
        oneof = field.containing_oneof
        if oneof is not None and not _synthetic(oneof):
            if chosen_oneof_members[oneof.name] is not field:
                continue
        elif not everything and rng.random() < 0.3:
            continue
        _set_field(message, field, rng, depth)


def _synthetic(oneof: Any) -> bool:
    return bool(len(oneof.fields) == 1 and oneof.fields[0].has_presence and oneof.name.startswith("_"))


def _set_field(message: Any, field: FieldDescriptor, rng: random.Random, depth: int) -> None:
    name = field.name
    if _is_map(field):
        entry = field.message_type
        key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
        container = getattr(message, name)
        for _ in range(rng.randint(0, 3)):
            key = _scalar(key_field, rng)
            if value_field.message_type is not None:
                if depth < MAX_DEPTH:
                    populate(container[key], rng, depth + 1)
            else:
                container[key] = _scalar(value_field, rng)
        return
    if field.is_repeated:
        container = getattr(message, name)
        for _ in range(rng.randint(0, 3)):
            if field.message_type is not None:
                if depth < MAX_DEPTH:
                    populate(container.add(), rng, depth + 1)
            else:
                container.append(_scalar(field, rng))
        return
    if field.message_type is not None:
        if depth >= MAX_DEPTH:
            return
        sub = getattr(message, name)
        sub.SetInParent()  # present even when left empty: json_format then prints {}
        populate(sub, rng, depth + 1)
        return
    setattr(message, name, _scalar(field, rng))


def gen_message_types() -> list[type[Message]]:
    for module in pkgutil.walk_packages(gen.platform.__path__, "gen.platform."):
        if module.name.endswith("_pb2"):
            importlib.import_module(module.name)
    pool = descriptor_pool.Default()
    types: list[type[Message]] = []
    for module in sorted(pkgutil.walk_packages(gen.platform.__path__, "gen.platform."), key=lambda m: m.name):
        if not module.name.endswith("_pb2"):
            continue
        file = pool.FindFileByName(importlib.import_module(module.name).DESCRIPTOR.name)
        for desc in _all_messages(file.message_types_by_name.values()):
            types.append(message_factory.GetMessageClass(desc))
    return types


def _all_messages(descs: Any) -> Iterator[Descriptor]:
    for desc in descs:
        if desc.GetOptions().map_entry:
            continue
        yield desc
        yield from _all_messages(desc.nested_types)


def _with_point_figures(message: Message, js: Any) -> Any:
    """json_format's answer with the one documented exception applied: usage points write out every scalar figure."""
    desc = message.DESCRIPTOR
    if not isinstance(js, dict):
        return js
    if desc.full_name in protojson._FIGURES_ALWAYS_WRITTEN:
        defaults = json_format.MessageToDict(type(message)(), always_print_fields_with_no_presence=True)
        ordered = sorted(desc.fields, key=lambda f: f.number)
        return {
            f.json_name: js[f.json_name] if f.json_name in js else defaults[f.json_name]
            for f in ordered
            if f.json_name in js or (f.message_type is None and not f.is_repeated)
        }
    for field in desc.fields:
        if field.message_type is None or field.json_name not in js or field.message_type.GetOptions().map_entry:
            continue
        value = getattr(message, field.name)
        if field.is_repeated:
            js[field.json_name] = [_with_point_figures(m, j) for m, j in zip(value, js[field.json_name], strict=True)]
        else:
            js[field.json_name] = _with_point_figures(value, js[field.json_name])
    return js


def assert_same_as_json_format(message: Message) -> None:
    try:
        expected = _with_point_figures(message, json_format.MessageToDict(message))
    except Exception as exc:
        with pytest.raises(Exception):  # noqa: B017 -- whatever json_format raises, the plan must not answer
            message_to_json_object(message)
        with pytest.raises(type(exc)):
            message_to_dict(message)
        return
    actual = message_to_json_object(message)
    assert orjson.loads(orjson.dumps(actual)) == orjson.loads(orjson.dumps(expected)), message
    # The same bytes, key order included: switching encoders changes nothing on the wire.
    assert JsonCodec().encode(message) == orjson.dumps(expected)


GEN_TYPES = gen_message_types()


def test_gen_has_many_message_types() -> None:
    assert len(GEN_TYPES) > 100
    names = {cls.DESCRIPTOR.full_name for cls in GEN_TYPES}
    assert "platform.tenants.v1.ListGroupsResponse" in names


@pytest.mark.parametrize("cls", GEN_TYPES, ids=lambda cls: cls.DESCRIPTOR.full_name)
def test_every_gen_message_encodes_as_json_format_does(cls: type[Message]) -> None:
    assert_same_as_json_format(cls())
    for seed in range(SEEDS):
        rng = random.Random(f"{cls.DESCRIPTOR.full_name}/{seed}")
        message = cls()
        populate(message, rng, everything=seed % 4 == 0)
        assert_same_as_json_format(message)


def _coverage_files() -> list[descriptor_pb2.FileDescriptorProto]:
    """Schemas built from descriptors (no protoc at test time): everything gen/ does not use yet."""
    scalar_types = [
        ("f_double", F.TYPE_DOUBLE),
        ("f_float", F.TYPE_FLOAT),
        ("f_int32", F.TYPE_INT32),
        ("f_int64", F.TYPE_INT64),
        ("f_uint32", F.TYPE_UINT32),
        ("f_uint64", F.TYPE_UINT64),
        ("f_sint32", F.TYPE_SINT32),
        ("f_sint64", F.TYPE_SINT64),
        ("f_fixed32", F.TYPE_FIXED32),
        ("f_fixed64", F.TYPE_FIXED64),
        ("f_sfixed32", F.TYPE_SFIXED32),
        ("f_sfixed64", F.TYPE_SFIXED64),
        ("f_bool", F.TYPE_BOOL),
        ("f_string", F.TYPE_STRING),
        ("f_bytes", F.TYPE_BYTES),
    ]
    key_types = [t for t in scalar_types if t[1] not in (F.TYPE_DOUBLE, F.TYPE_FLOAT, F.TYPE_BYTES)]
    wkts = [
        ("t_any", ".google.protobuf.Any"),
        ("t_duration", ".google.protobuf.Duration"),
        ("t_empty", ".google.protobuf.Empty"),
        ("t_mask", ".google.protobuf.FieldMask"),
        ("t_struct", ".google.protobuf.Struct"),
        ("t_value", ".google.protobuf.Value"),
        ("t_list", ".google.protobuf.ListValue"),
        ("t_time", ".google.protobuf.Timestamp"),
        *((f"w_{w.lower()}", f".google.protobuf.{w}Value") for w in _WRAPPERS),
    ]
    f3 = descriptor_pb2.FileDescriptorProto(
        name="switchboard/test/protojson3.proto",
        package="switchboard.test.protojson",
        syntax="proto3",
        dependency=[
            "google/protobuf/any.proto",
            "google/protobuf/duration.proto",
            "google/protobuf/empty.proto",
            "google/protobuf/field_mask.proto",
            "google/protobuf/struct.proto",
            "google/protobuf/timestamp.proto",
            "google/protobuf/wrappers.proto",
        ],
    )
    open_enum = f3.enum_type.add(name="Color")
    for number, name in enumerate(["COLOR_UNSPECIFIED", "COLOR_RED", "COLOR_GREEN"]):
        open_enum.value.add(name=name, number=number)
    all_types = f3.message_type.add(name="AllTypes")
    all_types.oneof_decl.add(name="choice")  # a real oneof precedes the synthetic ones of `optional` fields
    choice = 0
    number = 1
    for label in (F.LABEL_OPTIONAL, F.LABEL_REPEATED):
        for name, type_ in [*scalar_types, ("f_enum", F.TYPE_ENUM)]:
            prefix = "r_" if label == F.LABEL_REPEATED else ""
            field = all_types.field.add(name=prefix + name, number=number, type=type_, label=label)
            if type_ == F.TYPE_ENUM:
                field.type_name = ".switchboard.test.protojson.Color"
            number += 1
    # proto3 `optional`: a synthetic oneof each, so zero values are printed when set.
    for name, type_ in [*scalar_types, ("f_enum", F.TYPE_ENUM)]:
        all_types.oneof_decl.add(name=f"_o_{name}")
        field = all_types.field.add(
            name=f"o_{name}",
            number=number,
            type=type_,
            label=F.LABEL_OPTIONAL,
            proto3_optional=True,
            oneof_index=len(all_types.oneof_decl) - 1,
        )
        if type_ == F.TYPE_ENUM:
            field.type_name = ".switchboard.test.protojson.Color"
        number += 1
    for name, type_, type_name in [
        ("c_string", F.TYPE_STRING, ""),
        ("c_int64", F.TYPE_INT64, ""),
        ("c_node", F.TYPE_MESSAGE, ".switchboard.test.protojson.Node"),
        ("c_time", F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
        ("c_enum", F.TYPE_ENUM, ".switchboard.test.protojson.Color"),
    ]:
        field = all_types.field.add(name=name, number=number, type=type_, label=F.LABEL_OPTIONAL, oneof_index=choice)
        if type_name:
            field.type_name = type_name
        number += 1
    for label in (F.LABEL_OPTIONAL, F.LABEL_REPEATED):
        for name, type_name in wkts:
            prefix = "r_" if label == F.LABEL_REPEATED else ""
            all_types.field.add(
                name=prefix + name, number=number, type=F.TYPE_MESSAGE, type_name=type_name, label=label
            )
            number += 1
    number = _add_maps(all_types, key_types, number)
    # Names: a custom json_name, Python keywords, and a name json_format camel-cases oddly.
    all_types.field.add(name="renamed", number=number, type=F.TYPE_STRING, json_name="customName")
    all_types.field.add(name="from", number=number + 1, type=F.TYPE_INT32)
    all_types.field.add(name="class", number=number + 2, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    all_types.field.add(name="snake_case_2_x", number=number + 3, type=F.TYPE_BOOL)
    for field in all_types.field:
        if not field.label:
            field.label = F.LABEL_OPTIONAL
    node = f3.message_type.add(name="Node")
    node.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    node.field.add(name="child", number=2, type=F.TYPE_MESSAGE, type_name=".switchboard.test.protojson.Node", label=1)
    node.field.add(
        name="children", number=3, type=F.TYPE_MESSAGE, type_name=".switchboard.test.protojson.Node", label=3
    )
    node.field.add(name="all", number=4, type=F.TYPE_MESSAGE, type_name=".switchboard.test.protojson.AllTypes", label=1)

    return [f3, _legacy_file()]


def _add_maps(all_types: Any, key_types: list[tuple[str, int]], number: int) -> int:
    """Maps of every key type, against scalar, enum and message values; returns the next free field number."""
    values = [("string", F.TYPE_STRING, ""), ("double", F.TYPE_DOUBLE, ""), ("bytes", F.TYPE_BYTES, "")]
    values += [("enum", F.TYPE_ENUM, ".switchboard.test.protojson.Color")]
    values += [("node", F.TYPE_MESSAGE, ".switchboard.test.protojson.Node")]
    values += [("time", F.TYPE_MESSAGE, ".google.protobuf.Timestamp")]
    values += [("int64", F.TYPE_INT64, ""), ("value", F.TYPE_MESSAGE, ".google.protobuf.Value")]
    for key_name, key_type in key_types:
        for value_name, value_type, value_type_name in values:
            entry_name = f"M{key_name[2:].capitalize()}{value_name.capitalize()}Entry"
            entry = all_types.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=key_type, label=F.LABEL_OPTIONAL)
            value_field = entry.field.add(name="value", number=2, type=value_type, label=F.LABEL_OPTIONAL)
            if value_type_name:
                value_field.type_name = value_type_name
            all_types.field.add(
                name=f"m_{key_name[2:]}_{value_name}",
                number=number,
                type=F.TYPE_MESSAGE,
                type_name=f".switchboard.test.protojson.AllTypes.{entry_name}",
                label=F.LABEL_REPEATED,
            )
            number += 1
    return number


def _legacy_file() -> descriptor_pb2.FileDescriptorProto:
    """proto2: a closed enum, a field with a non-zero default, and an extension."""
    f2 = descriptor_pb2.FileDescriptorProto(
        name="switchboard/test/protojson2.proto", package="switchboard.test.protojson", syntax="proto2"
    )
    closed = f2.enum_type.add(name="Closed")
    closed.value.add(name="CLOSED_ONE", number=1)
    closed.value.add(name="CLOSED_TWO", number=2)
    legacy = f2.message_type.add(name="Legacy")
    legacy.field.add(name="closed", number=1, type=F.TYPE_ENUM, type_name=".switchboard.test.protojson.Closed")
    legacy.field.add(name="count", number=2, type=F.TYPE_INT32, default_value="5")
    legacy.field.add(name="label", number=3, type=F.TYPE_STRING)
    legacy.field[0].label = legacy.field[1].label = legacy.field[2].label = F.LABEL_OPTIONAL
    legacy.extension_range.add(start=100, end=200)
    f2.extension.add(
        name="legacy_note",
        number=100,
        type=F.TYPE_STRING,
        label=F.LABEL_OPTIONAL,
        extendee=".switchboard.test.protojson.Legacy",
    )
    return f2


_WRAPPERS = ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"]


def _coverage_classes() -> dict[str, type[Message]]:
    pool = descriptor_pool.Default()
    for file in _coverage_files():
        try:
            pool.FindFileByName(file.name)
        except KeyError:
            pool.Add(file)
    names = ["AllTypes", "Node", "Legacy"]
    return {
        n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"switchboard.test.protojson.{n}")) for n in names
    }


assert duration_pb2 and empty_pb2 and field_mask_pb2 and struct_pb2 and wrappers_pb2
COVERAGE = _coverage_classes()


@pytest.mark.parametrize("name", ["AllTypes", "Node"])
def test_coverage_schema_encodes_as_json_format_does(name: str) -> None:
    cls = COVERAGE[name]
    assert_same_as_json_format(cls())
    for seed in range(SEEDS * 2):  # 200 took 43 s of CI's 2 cores; a bug in a rarely drawn path shows at 80 too
        rng = random.Random(f"{name}/{seed}")
        message = cls()
        populate(message, rng, everything=seed % 3 == 0)
        assert_same_as_json_format(message)


def test_well_known_types_at_the_top_level() -> None:
    for desc in COVERAGE["AllTypes"].DESCRIPTOR.fields:
        if desc.message_type is None or not desc.message_type.full_name.startswith("google.protobuf."):
            continue
        cls = message_factory.GetMessageClass(desc.message_type)
        if desc.message_type.GetOptions().map_entry:
            continue
        assert_same_as_json_format(cls())
        for seed in range(SEEDS):
            message = cls()
            populate(message, random.Random(f"{desc.name}/{seed}"))
            assert_same_as_json_format(message)


def test_zero_values_follow_presence() -> None:
    message: Any = COVERAGE["AllTypes"]()
    message.f_int64 = 0
    message.f_string = ""
    message.o_f_int64 = 0
    message.o_f_string = ""
    message.o_f_enum = 0
    message.c_int64 = 0
    message.t_struct.SetInParent()
    message.f_double = -0.0
    out = message_to_json_object(message)
    assert out == {"oFInt64": "0", "oFString": "", "oFEnum": "COLOR_UNSPECIFIED", "cInt64": "0", "tStruct": {}} | {
        "fDouble": -0.0
    }
    assert_same_as_json_format(message)


def test_edge_values_one_by_one() -> None:
    """Each pool value alone in its field, so a wrong conversion of one value cannot hide behind a lucky draw."""
    cls = COVERAGE["AllTypes"]
    for field in cls.DESCRIPTOR.fields:
        if field.message_type is not None or field.is_repeated:
            continue
        pool = _SCALARS.get(field.type) or [v.number for v in field.enum_type.values] + [12345]
        for value in pool:
            message: Any = cls()
            setattr(message, field.name, value)
            assert_same_as_json_format(message)


def test_values_json_format_refuses_are_refused() -> None:
    message: Any = COVERAGE["AllTypes"]()
    message.t_value.number_value = math.nan
    assert_same_as_json_format(message)
    message = COVERAGE["AllTypes"]()
    message.t_time.seconds = 253402300800  # one second past 9999-12-31
    assert_same_as_json_format(message)
    legacy: Any = COVERAGE["Legacy"]()
    legacy.ParseFromString(b"\x08\x07")  # 7 is no value of the closed enum: kept as an unknown field
    assert_same_as_json_format(legacy)


def test_extensions_and_proto2_go_through_json_format() -> None:
    cls = COVERAGE["Legacy"]
    legacy: Any = cls(closed=2, count=0, label="")
    assert message_to_json_object(legacy) == {"closed": "CLOSED_TWO", "count": 0, "label": ""}
    assert_same_as_json_format(legacy)
    extension = descriptor_pool.Default().FindExtensionByName("switchboard.test.protojson.legacy_note")
    legacy.Extensions[extension] = "note"
    assert message_to_dict(legacy) == json_format.MessageToDict(legacy)
    assert "[switchboard.test.protojson.legacy_note]" in message_to_dict(legacy)


def test_any_holding_a_gen_message() -> None:
    from gen.platform.tenants.v1.group_pb2 import Group

    message: Any = COVERAGE["AllTypes"]()
    packed = any_pb2.Any()
    packed.Pack(Group(id="g", tenant_id="t", name="n", member_count=3))
    message.t_any.CopyFrom(packed)
    message.r_t_any.add().CopyFrom(packed)
    assert_same_as_json_format(message)
    assert message_to_json_object(message)["tAny"]["memberCount"] == 3


def test_timestamps_across_the_whole_range() -> None:
    """Thousands of distinct days (past the plan's day cache), every fraction length, and both ends of the range."""
    rng = random.Random("timestamps")
    seconds = [rng.randint(-62135596800, 253402300799) for _ in range(6000)] + _TIMESTAMP_SECONDS
    for second in seconds:
        nanos = rng.choice([*_NANOS, rng.randrange(1_000_000_000)])
        stamp = timestamp_pb2.Timestamp(seconds=second, nanos=nanos)
        assert message_to_json_object(stamp) == stamp.ToJsonString()
    # The day cache stays bounded however many days a server has formatted.
    assert 0 < len(protojson._DAYS) <= protojson._DAYS_CACHED
    for second, nanos in [(253402300800, 0), (-62135596801, 0), (0, -1), (0, 1_000_000_000)]:
        assert_same_as_json_format(timestamp_pb2.Timestamp(seconds=second, nanos=nanos))


def test_enum_values_with_a_json_name_option() -> None:
    """json_format prints an enum value's `pb.enumvalue.json` string instead of its name when that option is set."""
    options_pb2 = pytest.importorskip("google.protobuf.json_enumvalue_options_pb2")
    file = descriptor_pb2.FileDescriptorProto(
        name="switchboard/test/protojson_enum_json.proto",
        package="switchboard.test.protojson.enumjson",
        syntax="proto3",
        dependency=["google/protobuf/json_enumvalue_options.proto"],
    )
    enum = file.enum_type.add(name="Mood")
    enum.value.add(name="MOOD_UNSPECIFIED", number=0)
    happy = enum.value.add(name="MOOD_HAPPY", number=1)
    happy.options.Extensions[options_pb2.json].string = "happy"
    enum.value.add(name="MOOD_SAD", number=2)
    holder = file.message_type.add(name="Holder")
    holder.field.add(
        name="mood",
        number=1,
        type=F.TYPE_ENUM,
        label=F.LABEL_OPTIONAL,
        type_name=".switchboard.test.protojson.enumjson.Mood",
    )
    holder.field.add(
        name="moods",
        number=2,
        type=F.TYPE_ENUM,
        label=F.LABEL_REPEATED,
        type_name=".switchboard.test.protojson.enumjson.Mood",
    )
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)
    cls: Any = message_factory.GetMessageClass(pool.FindMessageTypeByName("switchboard.test.protojson.enumjson.Holder"))
    message = cls(mood=1, moods=[0, 1, 2, 9])
    assert json_format.MessageToDict(message)["mood"] == "happy"
    assert message_to_json_object(message) == {"mood": "happy", "moods": ["MOOD_UNSPECIFIED", "happy", "MOOD_SAD", 9]}
    assert_same_as_json_format(message)
