"""Light model classes: the pydantic class bodies, validated and serialized by ``pydantic_core``
from the stored schemas (:mod:`pcidoc.model.compiled`), without importing pydantic.

A class body written for pydantic (annotations, ``Field(...)`` defaults, methods) creates a plain
Python class here; its validator and serializer are built on first use from the schema pydantic
generated for the same body. ``pydantic_core`` creates the instances exactly as it does for
pydantic models (``__dict__`` with every field, the set of fields given), so validation rules,
error messages, defaults and JSON output are pydantic's own. This module implements the part of
pydantic's model API pcidoc uses: construction, ``model_validate``, ``model_validate_json``,
``model_dump``, ``model_dump_json``, ``model_copy``, ``model_construct``, ``model_fields`` and
``model_fields_set``, equality, ``repr`` and copying.
"""

from __future__ import annotations

from pcidoc.model.compiled import core

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from pydantic_core import CoreConfig, SchemaSerializer, SchemaValidator
else:
    SchemaSerializer = core().SchemaSerializer
    SchemaValidator = core().SchemaValidator

_ENTRIES: dict[type, tuple[dict[str, Any], CoreConfig]] = {}
_VALIDATORS: dict[type, SchemaValidator] = {}
_SERIALIZERS: dict[type, SchemaSerializer] = {}
_FIELDS: dict[type, dict[str, _FieldInfo]] = {}
_MISSING: Any = object()


def ConfigDict(**settings: Any) -> dict[str, Any]:
    """pydantic's ``ConfigDict``: only kept (the stored schema carries the configuration)."""
    return settings


def Field(default: Any = _MISSING, **_details: Any) -> Any:
    """pydantic's ``Field``: the stored schema carries defaults, aliases and constraints, so the
    class attribute is only a placeholder (instances always hold every field)."""
    return None if default is _MISSING else default


class _FieldInfo:
    """What ``model_fields`` tells about a field: its alias and whether it is required."""

    __slots__ = ("alias", "required")

    def __init__(self, alias: str | None, required: bool) -> None:
        self.alias = alias
        self.required = required

    def is_required(self) -> bool:
        return self.required


def _entry(cls: type) -> tuple[dict[str, Any], CoreConfig]:
    """``cls``'s stored schema and config, decoded once (validator and serializer share it)."""
    found = _ENTRIES.get(cls)
    if found is None:
        from pcidoc.model.compiled import stored_entry

        entry = stored_entry(cls)
        found = _ENTRIES[cls] = (entry["schema"], entry["config"])
    return found


def _validator(cls: type) -> SchemaValidator:
    validator = _VALIDATORS.get(cls)
    if validator is None:
        schema, config = _entry(cls)
        validator = _VALIDATORS[cls] = SchemaValidator(schema, config)
    return validator


def _serializer(cls: type) -> SchemaSerializer:
    serializer = _SERIALIZERS.get(cls)
    if serializer is None:
        schema, config = _entry(cls)
        serializer = _SERIALIZERS[cls] = SchemaSerializer(schema, config)
    return serializer


def _model_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``model`` node of a class's own schema (under ``definitions`` when it has any)."""
    if schema.get("type") == "definitions":
        inner = schema["schema"]
        if inner.get("type") == "definition-ref":
            ref = inner["schema_ref"]
            return next(d for d in schema["definitions"] if d.get("ref") == ref)
        return inner
    return schema


def _fields(cls: type) -> dict[str, _FieldInfo]:
    fields = _FIELDS.get(cls)
    if fields is None:
        model = _model_schema(_entry(cls)[0])
        fields = {}
        for name, field in model["schema"]["fields"].items():
            alias = field.get("validation_alias")
            fields[name] = _FieldInfo(
                alias if isinstance(alias, str) else None,
                field["schema"].get("type") != "default",
            )
        _FIELDS[cls] = fields
    return fields


class _ModelFields:
    """``Class.model_fields``: the fields in declaration order."""

    def __get__(self, obj: Any, owner: type) -> dict[str, _FieldInfo]:
        return _fields(owner)


class _ModelSerializer:
    """``Class.__pydantic_serializer__``: the class's compiled serializer, as on a pydantic
    model (its ``to_json`` gives bytes, which ``check --json`` writes as they are)."""

    def __get__(self, obj: Any, owner: type) -> SchemaSerializer:
        return _serializer(owner)


class _AnnotationOnly:
    """``typing.Any`` and ``typing.Literal`` where the models are light classes: their
    annotations are never evaluated (the stored schemas validate), so a name such as
    ``Severity = Literal["pass", ...]`` only has to exist for the modules that import it."""

    def __getitem__(self, item: object) -> _AnnotationOnly:
        return self

    def __repr__(self) -> str:
        return "<annotation only: light models>"


ANNOTATION_ONLY = _AnnotationOnly()


_IMMUTABLE = (str, int, float, bool, bytes, type(None))


def _default_copy(value: Any) -> Any:
    """A field's default for a new instance: a deep copy, as pydantic makes, except of an
    immutable scalar (pydantic's own shortcut), which saves importing ``copy`` (and ``weakref``)
    on ``check --json``'s path, where the report's only plain default is its schema tag."""
    if type(value) in _IMMUTABLE:
        return value
    import copy  # not at the top: copy and weakref cost ~1 ms of every start

    return copy.deepcopy(value)


class LiteModel:
    """Base of the light model classes (see the module docstring)."""

    __slots__ = (
        "__dict__",
        "__pydantic_extra__",
        "__pydantic_fields_set__",
        "__pydantic_private__",
    )

    if TYPE_CHECKING:
        __pydantic_extra__: dict[str, Any] | None
        __pydantic_fields_set__: set[str]
        __pydantic_private__: dict[str, Any] | None

    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, _FieldInfo]] = _ModelFields()  # type: ignore[assignment]
    __pydantic_serializer__: ClassVar[SchemaSerializer] = _ModelSerializer()  # type: ignore[assignment]

    def __init__(self, /, **data: Any) -> None:
        _validator(type(self)).validate_python(data, self_instance=self)

    # ------------------------------------------------------------------ validation

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        from_attributes: bool | None = None,
        context: Any = None,
    ) -> Any:
        return _validator(cls).validate_python(
            obj, strict=strict, from_attributes=from_attributes, context=context
        )

    @classmethod
    def model_validate_json(
        cls, json_data: str | bytes, *, strict: bool | None = None, context: Any = None
    ) -> Any:
        return _validator(cls).validate_json(json_data, strict=strict, context=context)

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Any:
        """An instance from trusted values, defaults filled, nothing validated."""
        model = _model_schema(_entry(cls)[0])
        data: dict[str, Any] = {}
        for name, field in model["schema"]["fields"].items():
            schema = field["schema"]
            if name in values:
                data[name] = values[name]
            elif schema.get("type") == "default":
                factory = schema.get("default_factory")
                if factory is not None:
                    data[name] = factory()
                else:
                    data[name] = _default_copy(schema["default"])
        instance = cls.__new__(cls)
        object.__setattr__(instance, "__dict__", data)
        object.__setattr__(instance, "__pydantic_fields_set__", set(_fields_set or values))
        object.__setattr__(instance, "__pydantic_extra__", None)
        object.__setattr__(instance, "__pydantic_private__", None)
        return instance

    @classmethod
    def model_json_schema(cls, by_alias: bool = True) -> dict[str, Any]:
        """The JSON Schema pydantic generated (by alias) for the formats' root classes."""
        from pcidoc.model.compiled import stored_json_schema

        if not by_alias:
            raise NotImplementedError("only the by-alias JSON Schema is stored")
        return stored_json_schema(cls)

    # ------------------------------------------------------------------ serialization

    def model_dump(
        self,
        *,
        mode: str = "python",
        include: Any = None,
        exclude: Any = None,
        by_alias: bool | None = None,
        exclude_unset: bool = False,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
        round_trip: bool = False,
        warnings: bool = True,
    ) -> dict[str, Any]:
        return _serializer(type(self)).to_python(
            self,
            mode=mode,
            include=include,
            exclude=exclude,
            by_alias=by_alias,
            exclude_unset=exclude_unset,
            exclude_defaults=exclude_defaults,
            exclude_none=exclude_none,
            round_trip=round_trip,
            warnings=warnings,
        )

    def model_dump_json(
        self,
        *,
        indent: int | None = None,
        include: Any = None,
        exclude: Any = None,
        by_alias: bool | None = None,
        exclude_unset: bool = False,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
        round_trip: bool = False,
        warnings: bool = True,
    ) -> str:
        if (include, exclude, exclude_unset, exclude_defaults, exclude_none, round_trip) == (
            None, None, False, False, False, False,
        ):  # fmt: skip
            from pcidoc.model.litejson import json_bytes  # writes without the package's import

            return json_bytes(self, indent=indent, by_alias=bool(by_alias)).decode()
        return (
            _serializer(type(self))
            .to_json(
                self,
                indent=indent,
                include=include,
                exclude=exclude,
                by_alias=by_alias,
                exclude_unset=exclude_unset,
                exclude_defaults=exclude_defaults,
                exclude_none=exclude_none,
                round_trip=round_trip,
                warnings=warnings,
            )
            .decode()
        )

    # ------------------------------------------------------------------ copies and state

    @property
    def model_fields_set(self) -> set[str]:
        return self.__pydantic_fields_set__

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        copied = self.__deepcopy__() if deep else self.__copy__()
        if update:
            copied.__dict__.update(update)
            copied.__pydantic_fields_set__.update(update)
        return copied

    def __copy__(self) -> Any:
        import copy as _copy

        cls = type(self)
        copied = cls.__new__(cls)
        object.__setattr__(copied, "__dict__", dict(self.__dict__))
        object.__setattr__(copied, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        object.__setattr__(copied, "__pydantic_extra__", _copy.copy(self.__pydantic_extra__))
        object.__setattr__(copied, "__pydantic_private__", _copy.copy(self.__pydantic_private__))
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        import copy as _copy

        cls = type(self)
        copied = cls.__new__(cls)
        object.__setattr__(copied, "__dict__", _copy.deepcopy(self.__dict__, memo))
        object.__setattr__(copied, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        extra = _copy.deepcopy(self.__pydantic_extra__, memo)
        object.__setattr__(copied, "__pydantic_extra__", extra)
        private = _copy.deepcopy(self.__pydantic_private__, memo)
        object.__setattr__(copied, "__pydantic_private__", private)
        return copied

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in _fields(type(self)):
            self.__pydantic_fields_set__.add(name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, LiteModel)
        return (
            self.__dict__ == other.__dict__
            and self.__pydantic_private__ == other.__pydantic_private__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic models

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({args})"

    def __iter__(self) -> Any:
        yield from self.__dict__.items()
