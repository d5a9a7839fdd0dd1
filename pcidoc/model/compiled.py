"""The models' validation and serialization schemas, generated ahead of time.

The models are written as pydantic classes (:mod:`pcidoc.model.facts` and its siblings). pydantic
turns each class into a *core schema* and hands it to ``pydantic_core``, which validates and
serializes. Importing pydantic's model machinery, creating the classes and building their schemas
costs more than 100 ms at every start of ``pcidoc check``, ``import`` and the TUI, although the
result depends only on the model definitions and the pydantic version. So the schemas pydantic
builds are generated once, stored next to this module as ``compiled.jsonl``, and at run time the
same class bodies become light classes (:mod:`pcidoc.model.lite`) validated and serialized by
``pydantic_core`` from the stored schemas: the same validator, the same serializer, the same
errors and the same JSON, without importing pydantic.

The store is used only when it was generated from the same model sources and the same
``pydantic_core`` as the running ones (a checksum of every model module's source and the version
are in its first line; one changed module disables all of it, since a class's schema embeds the
schemas of the classes it holds). Otherwise the classes are ordinary pydantic models, so a stale
store costs time, never correctness. ``PCIDOC_COMPILED_SCHEMAS=0`` forces pydantic models.
``python -m pcidoc.model.schemas`` regenerates the store; ``tests/test_schemas.py`` fails when it
is stale.

Format: JSON lines. Line 1 is a header (versions, the source digests, the line of each class).
Every other line is one class's ``{"config": ..., "schema": ...}``, in which Python objects are
tagged: ``{"$class": "module:qualname"}`` (model classes, ``list``/``dict`` default factories),
``{"$method": ["module:qualname", "name"]}`` (pydantic's JSON Schema hooks, unused at run time)
and ``{"$tuple": [...]}``.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module

from pcidoc._lazyre import lazy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, BinaryIO

STORE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compiled.jsonl")
JSON_SCHEMA_ROOTS = (
    "pcidoc.model.capture:Capture",
    "pcidoc.model.report:Report",
    "pcidoc.model.fleet:FleetReport",
)
"""Classes whose JSON Schema (``by_alias=True``) is stored too, for ``pcidoc schema``."""
_MODULES = (
    "pcidoc.model.base",
    "pcidoc.model.lite",
    "pcidoc.model.facts",
    "pcidoc.model.measurements",
    "pcidoc.model.runtime",
    "pcidoc.model.kernel",
    "pcidoc.model.evidence",
    "pcidoc.model.capture",
    "pcidoc.model.report",
    "pcidoc.model.fleet",
)
"""Modules whose source decides the classes and their schemas (fingerprinted in the store)."""

_REF_ID = lazy(r":\d+$")  # used when the store is generated, not at run time
_TAGS = "$tags"
"""Key of an entry's list of paths to its tagged nodes (see :func:`tag_paths`)."""
_SCHEMA_OF = "$schema-of"
"""Tag of a node that is another class's ``model`` schema, stored once in that class's entry."""
_JSON_SCHEMA_PREFIX = "json-schema:"
_store: _Store | None = None
_lite: bool | None = None


class _Store:
    """The parsed header and the class lines of :data:`STORE_FILE`, read once; the JSON Schema
    lines after them (half the file, for ``pcidoc schema`` only) when one is first asked for."""

    def __init__(self, handle: BinaryIO) -> None:
        # Lines stay bytes (the store is ASCII JSON): the engine parses bytes, and decoding the
        # whole file for the few entries a command needs cost more than reading it. Reading
        # and splitting the JSON Schemas too cost ~120 page faults of every start.
        header = core().from_json(handle.readline())  # the json module is not loaded on the way
        self.core: str = header["pydantic_core"]
        self.sources: dict[str, str] = header["sources"]
        self.lines: dict[str, int] = header["lines"]
        classes = [n for key, n in self.lines.items() if not key.startswith(_JSON_SCHEMA_PREFIX)]
        self.raw = [b""] + [handle.readline().rstrip(b"\n") for _ in range(max(classes, default=0))]
        self._entries: dict[str, dict[str, Any]] = {}

    def _line(self, number: int) -> bytes:
        """Line ``number`` of the store (the rest of the file is read on the first line past
        the class lines)."""
        if number >= len(self.raw):
            with open(STORE_FILE, "rb") as handle:
                self.raw = handle.read().split(b"\n")
        return self.raw[number]

    def fresh(self) -> bool:
        """True when the running ``pydantic_core`` and every model module's source are the ones
        the store was generated from."""
        if self.core != core().__version__ or set(self.sources) != set(_MODULES):
            return False
        return all(source_digest(name) == digest for name, digest in self.sources.items())

    def entry(self, key: str) -> dict[str, Any] | None:
        """The decoded entry ``key``: a class's ``{"config", "schema"}`` (decoded once and kept:
        other entries share its schema, and the engine only reads schemas), or a JSON Schema
        (decoded anew at every call, since its callers may change it)."""
        found = self._entries.get(key)
        if found is not None:
            return found
        line = self.lines.get(key)
        if line is None:
            return None
        # The engine's JSON parser, then the tagged nodes at the paths stored with the entry:
        # several times faster than an ``object_hook`` called on every one of its objects.
        entry: dict[str, Any] = core().from_json(self._line(line))
        for path in entry.pop(_TAGS, ()):
            parent: Any = entry
            for part in path[:-1]:
                parent = parent[part]
            node = parent[path[-1]]
            if _SCHEMA_OF in node:
                parent[path[-1]] = self.model_schema(node[_SCHEMA_OF])
            else:
                parent[path[-1]] = _decode(node)
        if not key.startswith(_JSON_SCHEMA_PREFIX):
            self._entries[key] = entry
        return entry

    def model_schema(self, key: str) -> dict[str, Any]:
        """The ``model`` schema of class ``key`` (its entry's schema, inside its ``definitions``
        when it has any), as stored in the other entries that hold it."""
        entry = self.entry(key)
        if entry is None:
            raise KeyError(f"no compiled schema for {key}: regenerate the store")
        schema: dict[str, Any] = entry["schema"]
        return schema["schema"] if schema.get("type") == "definitions" else schema


def enabled() -> bool:
    """False when ``PCIDOC_COMPILED_SCHEMAS=0`` (the models are then pydantic classes)."""
    return os.environ.get("PCIDOC_COMPILED_SCHEMAS", "1") != "0"


def lite_mode() -> bool:
    """Whether the models are light classes over the stored schemas (decided once, before the
    first model class is created)."""
    global _lite, _store
    if _lite is None:
        _lite = False
        if enabled():
            try:
                with open(STORE_FILE, "rb") as handle:
                    store = _Store(handle)
                if store.fresh():
                    _store, _lite = store, True
            except (OSError, ValueError, KeyError, IndexError):
                pass
    return _lite


def core() -> Any:
    """``pydantic_core``'s compiled engine, the ``pydantic_core._pydantic_core`` extension module.

    It holds everything light models use (``SchemaValidator``, ``SchemaSerializer``,
    ``ValidationError``, ``from_json``, ``__version__``). Importing the ``pydantic_core`` package
    would also run its ``__init__``, whose ``core_schema`` module (typed dictionaries for
    pydantic's schema builders, which light models never call) costs more start-up time than
    the engine itself, so the extension is loaded on its own, under its own name. A later
    ``import pydantic_core`` (pydantic models, or a user's code in the same process) finds it in
    ``sys.modules`` and uses this same module. Validation never needs the package; the first
    serialization of a model does (the engine reads ``pydantic_core.MISSING`` from it), so the
    saving goes to the commands that only read: ``topo``, the TUI's first screen, capture loading.

    Raises:
        ImportError: ``pydantic_core`` is not installed.
    """
    name = "pydantic_core._pydantic_core"
    module = sys.modules.get(name)
    if module is None:
        from importlib.machinery import PathFinder

        package = PathFinder.find_spec("pydantic_core")
        locations = package.submodule_search_locations if package else None
        spec = PathFinder.find_spec(name, list(locations)) if locations else None
        if spec is None or spec.loader is None:
            raise ImportError(f"No module named {name!r}", name=name)
        from importlib.util import module_from_spec

        module = sys.modules[name] = module_from_spec(spec)  # the real module, spec and all
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return module


def class_key(cls: type) -> str:
    """``module:qualname`` of a class (how the store names it)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def source_digest(module: str) -> str | None:
    """CRC-32 and size of a ``pcidoc.*`` module's source file (``None`` when it has none on
    disk): enough to notice an edited model (CI also compares the whole regenerated store), and
    cheaper to import than hashlib at every start."""
    import zlib

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    file = os.path.join(package, *module.split(".")[1:]) + ".py"
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return f"crc32:{zlib.crc32(data):08x}:{len(data)}"


def stored_json_schema(cls: type) -> dict[str, Any]:
    """``cls``'s stored JSON Schema (by alias; lite mode, :data:`JSON_SCHEMA_ROOTS` only)."""
    if _store is None:
        raise RuntimeError("the compiled schemas are not in use (pydantic models)")
    entry = _store.entry(_JSON_SCHEMA_PREFIX + class_key(cls))
    if entry is None:
        raise NotImplementedError(f"no stored JSON Schema for {class_key(cls)}")
    return entry


def stored_entry(cls: type) -> dict[str, Any]:
    """``cls``'s stored ``{"config", "schema"}`` (lite mode only)."""
    if _store is None:
        raise RuntimeError("the compiled schemas are not in use (pydantic models)")
    entry = _store.entry(class_key(cls))
    if entry is None:
        raise RuntimeError(f"no compiled schema for {class_key(cls)}: regenerate the store")
    return entry


# ----------------------------------------------------------------------------- encoding


def _resolve(key: str) -> Any:
    module, _, qualname = key.partition(":")
    obj: Any = import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _decode(node: dict[str, Any]) -> Any:
    if len(node) == 1:
        if "$class" in node:
            return _resolve(node["$class"])
        if "$method" in node:
            owner, name = node["$method"]
            # pydantic's JSON Schema hooks: light classes have none (metadata only).
            return getattr(_resolve(owner), name, None)
        if "$tuple" in node:
            return tuple(node["$tuple"])
    return node


def tag_paths(node: Any, path: tuple[str | int, ...] = ()) -> list[list[str | int]]:
    """Paths to the tagged nodes (``$class``, ``$method``, ``$tuple``) of an encoded schema,
    inner ones first (a ``$tuple``'s items are decoded before the tuple is made)."""
    found: list[list[str | int]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found += tag_paths(value, (*path, key))
        if len(node) == 1 and next(iter(node)) in ("$class", "$method", "$tuple", _SCHEMA_OF):
            found.append(list(path))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += tag_paths(value, (*path, index))
    return found


def encode(node: Any) -> Any:
    """A core schema as JSON-ready data (raises TypeError on anything that cannot be named)."""
    if isinstance(node, dict):
        out = {key: encode(value) for key, value in node.items()}
        for key in ("ref", "schema_ref"):
            # pydantic suffixes refs with ``:<id(cls)>``, different in every process.
            if isinstance(out.get(key), str):
                out[key] = _REF_ID.sub("", out[key])
        return out
    if isinstance(node, list):
        return [encode(value) for value in node]
    if isinstance(node, tuple):
        return {"$tuple": [encode(value) for value in node]}
    if node is None or isinstance(node, (str, int, float, bool)):
        return node
    if isinstance(node, type):
        key = class_key(node)
        if _resolve(key) is not node:
            raise TypeError(f"cannot store {node!r}: not importable as {key}")
        return {"$class": key}
    owner = getattr(node, "__self__", None)
    if isinstance(owner, type) and getattr(owner, node.__name__, None) == node:
        return {"$method": [class_key(owner), node.__name__]}
    raise TypeError(f"cannot store {node!r} in a compiled schema")


def encoded_entries(classes: list[type]) -> dict[str, dict[str, Any]]:
    """Each class's ``{"config", "schema"}`` as pydantic builds it, encoded (pydantic models)."""
    entries: dict[str, dict[str, Any]] = {}
    for cls in classes:
        cls.model_rebuild()  # type: ignore[attr-defined]
        schema = cls.__pydantic_core_schema__  # type: ignore[attr-defined]
        entries[class_key(cls)] = {"config": encode(core_config(cls)), "schema": encode(schema)}
    return entries


def _model_of(schema: dict[str, Any]) -> dict[str, Any]:
    return schema["schema"] if schema.get("type") == "definitions" else schema


def _definitions(schema: dict[str, Any]) -> dict[str, str]:
    """``ref`` -> canonical JSON of each definition of an encoded class schema."""
    if schema.get("type") != "definitions":
        return {}
    return {d["ref"]: _canonical(d) for d in schema["definitions"]}


def _canonical(node: Any) -> str:
    import json

    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def share_model_schemas(entries: dict[str, dict[str, Any]]) -> None:
    """Store each class's model schema once: in every encoded entry, a node that is exactly
    another class's model schema becomes ``{"$schema-of": key}`` (see :meth:`_Store.entry`).

    pydantic inlines every nested class's schema, so the report's entry held the capture's
    whole schema again (100 of its 138 KB) and the capture's held every GPU, NIC and host
    schema: decoding them cost a command about 2 ms. A node is shared only when it equals the
    other class's model schema and every definition that schema relies on is in the entry's
    own definitions (same ref, same content), so the decoded schema is the same.
    """
    models = {key: _model_of(entry["schema"]) for key, entry in entries.items()}
    canonical = {key: _canonical(model) for key, model in models.items()}
    definitions = {key: _definitions(entry["schema"]) for key, entry in entries.items()}

    def shareable(node: dict[str, Any], own: str) -> str | None:
        cls = node.get("cls")
        if node.get("type") != "model" or not isinstance(cls, dict) or "$class" not in cls:
            return None
        key = cls["$class"]
        if key == own or key not in canonical or _canonical(node) != canonical[key]:
            return None
        needed = definitions[key].items()
        return key if all(definitions[own].get(ref) == text for ref, text in needed) else None

    def walk(node: Any, own: str) -> Any:
        if isinstance(node, dict):
            if node is not models[own]:
                key = shareable(node, own)
                if key is not None:
                    return {_SCHEMA_OF: key}
            return {name: walk(value, own) for name, value in node.items()}
        if isinstance(node, list):
            return [walk(value, own) for value in node]
        return node

    for key, entry in entries.items():
        entry["schema"] = walk(entry["schema"], key)


def model_classes() -> list[type]:
    """Every model class of :data:`_MODULES`, in a fixed order (module, then definition)."""
    from pcidoc.model.base import Model

    classes: list[type] = []
    for name in _MODULES:
        module = import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Model)
                and value.__module__ == name
                and value not in classes
            ):
                classes.append(value)
    return classes


def core_config(cls: Any) -> dict[str, Any]:
    """The ``CoreConfig`` pydantic passes with ``cls``'s schema."""
    from pydantic._internal._config import ConfigWrapper

    return dict(ConfigWrapper(cls.model_config, check=False).core_config(title=cls.__name__))


def generate() -> str:
    """The store's text, built by pydantic itself. Needs a fresh interpreter whose models are
    pydantic classes: run with ``PCIDOC_COMPILED_SCHEMAS=0`` (``python -m pcidoc.model.schemas``
    does), since pydantic inlines or references nested schemas depending on what the process
    already built."""
    import json

    import pydantic
    import pydantic_core

    if lite_mode():
        raise RuntimeError("generate() needs pydantic models: set PCIDOC_COMPILED_SCHEMAS=0")
    classes = model_classes()
    built = [class_key(c) for c in classes if c.__pydantic_complete__]  # type: ignore[attr-defined]
    if built:
        raise RuntimeError(f"generate() needs a fresh interpreter; already built: {built[:3]}")
    entries = encoded_entries(classes)
    share_model_schemas(entries)
    lines: list[str] = []
    index: dict[str, int] = {}
    for key, entry in entries.items():
        index[key] = len(lines) + 1
        entry[_TAGS] = tag_paths(entry)
        # Field order is the serialization order: keys are never sorted.
        lines.append(json.dumps(entry, separators=(",", ":")))
    for key in JSON_SCHEMA_ROOTS:
        index[_JSON_SCHEMA_PREFIX + key] = len(lines) + 1
        schema = _resolve(key).model_json_schema(by_alias=True)
        lines.append(json.dumps(schema, separators=(",", ":")))
    header = {
        "pydantic": pydantic.VERSION,
        "pydantic_core": pydantic_core.__version__,
        "sources": {name: source_digest(name) for name in _MODULES},
        "lines": index,
    }
    return "\n".join([json.dumps(header, sort_keys=True), *lines]) + "\n"
