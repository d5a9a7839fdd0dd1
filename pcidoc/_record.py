"""Record classes: the part of :func:`dataclasses.dataclass` pcidoc uses, at a fraction of its
start-up cost.

``import dataclasses`` loads ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``): about
10 ms of CPU, and each decorated class compiles five generated methods. On the
``pcidoc check --json`` path that was an eighth of the whole start-up budget
(docs/performance.md). :func:`record` builds the same classes from the same class bodies: an
``__init__`` with the fields as parameters (generated, so constructing is as fast as a
dataclass), and ``__repr__``, ``__eq__``, ``__hash__`` and frozen ``__setattr__`` shared by every
record class.

Type checkers see :func:`dataclasses.dataclass` and :func:`dataclasses.field` (the names are
aliased under ``TYPE_CHECKING``), so field types and constructor calls are checked as before.

Modules that define record classes use ``from __future__ import annotations`` (a test checks
it): the fields are read from the class's ``__annotations__``.

Supported: defaults, ``field(default=..., default_factory=..., repr=..., compare=...)``,
``frozen=True``, ``eq=False``, ``__post_init__`` (defined or inherited: Textual's ``Message``
initialises itself there), inheritance between record classes; ``ClassVar`` annotations are
not fields. Not supported (and not used): ``InitVar``, ``KW_ONLY``, ordering, slots;
:func:`dataclasses.fields`/``asdict``/``replace`` do not apply to record classes
(:func:`field_names` lists the fields).
"""

from __future__ import annotations

__all__ = ["FrozenRecordError", "field", "field_names", "record"]


class FrozenRecordError(AttributeError):
    """Assignment to a field of a frozen record (as :class:`dataclasses.FrozenInstanceError`)."""


_MISSING: Any = object()


class _Field:
    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def _field(
    *,
    default: Any = _MISSING,
    default_factory: Any = _MISSING,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


def _is_class_var(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _collect(cls: type) -> tuple[_Field, ...]:
    """The fields of ``cls``: its bases' first, then its own annotations in order."""
    fields: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for inherited in base.__dict__.get("__record_fields__", ()):
            fields[inherited.name] = inherited
    # The class's own annotations (``inspect.get_annotations`` would import inspect).
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if own is None:
        if "__annotate__" in cls.__dict__:  # Python 3.14's deferred annotations
            raise TypeError(
                f"{cls.__qualname__}: record classes need `from __future__ import annotations` "
                "in their module (their fields are read from the class's __annotations__)"
            )
        own = {}
    for name, annotation in own.items():
        if _is_class_var(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True)
        spec.name = name
        fields[name] = spec
        if isinstance(value, _Field):
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
    seen_default = False
    for spec in fields.values():
        has_default = spec.default is not _MISSING or spec.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        seen_default = seen_default or has_default
    return tuple(fields.values())


def _make_init(cls: type, fields: tuple[_Field, ...], frozen: bool) -> Any:
    """``__init__(self, <fields>)``, compiled once per class like a dataclass's (calling
    ``__post_init__`` last when the class has one, as a dataclass does)."""
    names: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params, body = [], []
    for spec in fields:
        if spec.default_factory is not _MISSING:
            names[f"_factory_{spec.name}"] = spec.default_factory
            params.append(f"{spec.name}=_MISSING")
            value = f"_factory_{spec.name}() if {spec.name} is _MISSING else {spec.name}"
        elif spec.default is not _MISSING:
            names[f"_default_{spec.name}"] = spec.default
            params.append(f"{spec.name}=_default_{spec.name}")
            value = spec.name
        else:
            params.append(spec.name)
            value = spec.name
        if frozen:
            body.append(f"    _set(self, {spec.name!r}, {value})")
        else:
            body.append(f"    self.{spec.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    exec(source, names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _deferred_init(cls: type, fields: tuple[_Field, ...], frozen: bool) -> Any:
    """An ``__init__`` that compiles the class's own (:func:`_make_init`) at the first
    construction and puts it in its place: compiling costs ~0.2 ms a class, and half the record
    classes a command imports are never constructed in it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _make_init(cls, fields, frozen)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _key(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in self.__record_fields__ if f.compare)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _key(self) == _key(other)


def _hash(self: Any) -> int:
    return hash(_key(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a record class, in ``__init__``'s order."""
    return tuple(spec.name for spec in cls.__record_fields__)  # type: ignore[attr-defined]


def _record(cls: Any = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
    def wrap(cls: type) -> type:
        fields = _collect(cls)
        cls.__record_fields__ = fields  # type: ignore[attr-defined]
        cls.__init__ = _deferred_init(cls, fields, frozen)  # type: ignore[misc]
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = _repr  # type: ignore[assignment]
        if eq and "__eq__" not in cls.__dict__:
            cls.__eq__ = _eq  # type: ignore[assignment]
            # Like a dataclass: frozen records hash by their fields, mutable ones are unhashable.
            cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
        if frozen:
            cls.__setattr__ = _frozen_setattr  # type: ignore[assignment]
            cls.__delattr__ = _frozen_delattr  # type: ignore[assignment]
        return cls

    return wrap if cls is None else wrap(cls)


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from dataclasses import dataclass as record
    from dataclasses import field
    from typing import Any
else:
    record = _record
    field = _field
