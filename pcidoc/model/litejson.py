"""JSON of light models without the ``pydantic_core`` package (``check --json``'s report).

A light model's serializer (:mod:`pcidoc.model.lite`) is ``pydantic_core``'s compiled one; its
first use imports the ``pydantic_core`` package, because the engine reads ``MISSING`` from it:
~18 ms of CPU (``typing_extensions``, the typed dictionaries of ``core_schema``), a sixth of
``check --json`` on 72 GPUs. The engine's JSON writer for plain data (``to_json`` of the
extension module) needs no package. So :func:`json_bytes` turns a model into plain data (each
model a ``dict`` of its ``__dict__``, keys renamed by the serialization aliases) as the stored
schema says, and the engine writes that: the same writer (indent, escaping, floats, non-ASCII),
so the same bytes.

The stored schemas are read, not assumed. The plain data differs from what the model's own
serializer writes only where a field's type does, and those are the only conversions made: a
``float`` field holding an ``int`` (or ``bool``) is written as a float, an ``int`` field holding a
``bool`` as an integer; fields of other types are written the way the engine writes any value of
their type. Every other schema construct (field or model serializers, computed fields, excluded
fields, extra fields kept, root models, a serialization setting in a class's config, a model
field holding another model class or a subclass) makes :func:`json_bytes` use the model's own
serializer instead, so the output is the serializer's whatever the models become. The tests
compare both writers on every sample and on odd values in every field.
"""

from __future__ import annotations

from pcidoc.model.compiled import core
from pcidoc.model.lite import LiteModel, _entry, _serializer

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Convert = Callable[[Any], Any]
    _Plan = tuple[
        frozenset[str],
        dict[str, str],
        list[tuple[str, str]],
        list[tuple[str, str]],
        list[tuple[str, str, Convert]],
    ]
    """A model's field names, the keys its aliases rename, its ``int`` and ``float`` fields
    (name, key) and its other fields whose values need a conversion (name, key, conversion)."""
"""A value of a field's type to what the engine's plain-data writer writes the same way."""

_LEAVES = frozenset({"str", "bool", "literal", "any", "none"})
"""Types whose serializer writes any value as the plain-data writer does."""
_SCALARS = frozenset({"str", "bool", "int", "float", "none", "literal"})
"""Union choices that leave a value as it is (a union of them picks the value's own type)."""
_FIELD_KEYS = frozenset({"type", "schema", "metadata", "validation_alias", "serialization_alias"})
_MODEL_KEYS = frozenset({"type", "cls", "schema", "custom_init", "root_model", "config", "ref"})
_MODEL_KEYS |= {"metadata"}
_CONFIG_KEYS = frozenset({"extra_fields_behavior", "validate_by_alias", "validate_by_name"})
_CONFIG_KEYS |= {"title", "strict", "from_attributes", "populate_by_name", "revalidate_instances"}
_DUMPERS: dict[tuple[type, bool], Convert] = {}


class _Unsupported(Exception):
    """A schema construct (or a value) whose JSON only the model's own serializer writes."""


def json_bytes(model: LiteModel, *, indent: int | None = None, by_alias: bool = False) -> bytes:
    """What ``type(model).__pydantic_serializer__.to_json(model, indent=indent,
    by_alias=by_alias)`` returns, written without importing the ``pydantic_core`` package when
    the class's schema allows (see the module docstring)."""
    try:
        data = _model_dumper(type(model), _model_node(type(model)), {}, by_alias)(model)
    except _Unsupported:
        return _serializer(type(model)).to_json(model, indent=indent, by_alias=by_alias)
    return core().to_json(data, indent=indent, by_alias=by_alias, inf_nan_mode="null")


def _model_node(cls: type) -> dict[str, Any]:
    """``cls``'s own ``model`` schema node, with its definitions' ``ref`` -> node map."""
    schema = _entry(cls)[0]
    if schema.get("type") != "definitions":
        return schema
    inner = schema["schema"]
    if inner.get("type") == "definition-ref":
        inner = next(d for d in schema["definitions"] if d.get("ref") == inner["schema_ref"])
    return {**inner, "$definitions": {d["ref"]: d for d in schema["definitions"] if "ref" in d}}


def _to_float(value: Any) -> Any:
    # The float serializer writes any int (bool and int subclasses too) as a float.
    return float(value) if isinstance(value, int) else value


def _to_int(value: Any) -> Any:
    # The int serializer writes a bool as 0 or 1 (the plain-data writer as false or true).
    return int(value) if isinstance(value, bool) else value


def _converter(schema: dict[str, Any], defs: dict[str, Any], by_alias: bool) -> Convert | None:
    """The conversion a value of ``schema`` needs (``None``: none at all).

    Raises:
        _Unsupported: the schema holds something only its own serializer writes.
    """
    kind = schema.get("type")
    if "serialization" in schema:
        raise _Unsupported(kind)
    if kind in _LEAVES:
        return None
    if kind == "float":
        return _to_float
    if kind == "int":
        return _to_int
    if kind in ("default", "nullable"):
        return _converter(schema["schema"], defs, by_alias)
    if kind == "union" and all(choice.get("type") in _SCALARS for choice in schema["choices"]):
        return None
    if kind == "list":
        item = _converter(schema.get("items_schema", {"type": "any"}), defs, by_alias)
        return None if item is None else _each(item)
    if kind == "dict" and schema.get("keys_schema", {"type": "any"}).get("type") in _SCALARS:
        value = _converter(schema.get("values_schema", {"type": "any"}), defs, by_alias)
        return None if value is None else _each_value(value)
    if kind == "definition-ref" and schema["schema_ref"] in defs:
        return _converter(defs[schema["schema_ref"]], defs, by_alias)
    if kind == "model":
        return _model_dumper(schema["cls"], schema, defs, by_alias)
    raise _Unsupported(kind)


def _each(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return [item(x) for x in value] if isinstance(value, list) else value

    return convert


def _each_value(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return {k: item(x) for k, x in value.items()} if isinstance(value, dict) else value

    return convert


def _model_dumper(cls: type, node: dict[str, Any], defs: dict[str, Any], by_alias: bool) -> Convert:
    """A model instance of exactly ``cls`` as a dict (``None`` as it is); its fields are read from
    ``node`` on the first call (a class may hold itself through its definitions)."""
    found = _DUMPERS.get((cls, by_alias))
    if found is not None:
        return found
    plan: list[_Plan] = []

    def dump(value: Any) -> Any:
        if type(value) is not cls:
            if not hasattr(value, "__dict__"):
                return value  # written by its type, as the model's serializer writes it
            raise _Unsupported(type(value).__name__)  # it would write the object as a cls
        if not plan:
            plan.append(_model_plan(node, {**defs, **node.get("$definitions", {})}, by_alias))
        fields, renames, ints, floats, nested = plan[0]
        data = value.__dict__
        if not data.keys() <= fields:
            raise _Unsupported("an attribute that is not a field")
        out = {renames.get(k, k): x for k, x in data.items()} if renames else dict(data)
        for name, key in ints:  # the conversions of _to_int and _to_float, without a call
            if data.get(name).__class__ is bool:
                out[key] = int(data[name])
        for name, key in floats:
            if isinstance(data.get(name), int):
                out[key] = float(data[name])
        for name, key, convert in nested:
            if name in data:
                out[key] = convert(data[name])
        return out

    _DUMPERS[(cls, by_alias)] = dump
    return dump


def _model_plan(node: dict[str, Any], defs: dict[str, Any], by_alias: bool) -> _Plan:
    """The :data:`_Plan` of a ``model`` node."""
    inner = node.get("schema", {})
    if (
        not set(node) - {"$definitions"} <= _MODEL_KEYS
        or node.get("root_model")
        or not set(node.get("config") or {}) <= _CONFIG_KEYS
        or (node.get("config") or {}).get("extra_fields_behavior") == "allow"
        or inner.get("type") != "model-fields"
        or inner.get("computed_fields")
        or "extras_schema" in inner
    ):
        raise _Unsupported("model")
    renames: dict[str, str] = {}
    ints: list[tuple[str, str]] = []
    floats: list[tuple[str, str]] = []
    nested: list[tuple[str, str, Convert]] = []
    for name, field in inner["fields"].items():
        if not set(field) <= _FIELD_KEYS:
            raise _Unsupported(name)
        key = field.get("serialization_alias") if by_alias else None
        if isinstance(key, str) and key != name:
            renames[name] = key
        convert = _converter(field["schema"], defs, by_alias)
        named = (name, renames.get(name, name))
        if convert is _to_int:
            ints.append(named)
        elif convert is _to_float:
            floats.append(named)
        elif convert is not None:
            nested.append((*named, convert))
    return frozenset(inner["fields"]), renames, ints, floats, nested
