"""The models run as light classes over the stored schemas (pcidoc/model/compiled.jsonl) when
those match the sources, and as pydantic models otherwise; both must behave the same."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.model import compiled

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pcidoc" / "samples" / "data" / "h800-8gpu-hgx.json"

# `pcidoc check --json` in-process; prints which model classes ran and the report.
_CHECK = """
import contextlib, io, json, sys
{setup}
from pcidoc.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["check", "--json", "--from", sys.argv[1]])
from pcidoc.model.capture import Capture
json.dump({{"pydantic": "pydantic" in sys.modules, "package": "pydantic_core" in sys.modules,
           "stand_ins": sorted(n for n, m in list(sys.modules.items())
                               if n != "__main__" and getattr(m, "__spec__", 0) is None),
           "base": Capture.__mro__[2].__name__,
           "code": code, "report": out.getvalue()}}, sys.stderr)
"""

# The model API pcidoc and its tests use, exercised the same way in both modes.
_API = r"""
import copy, json, pickle, sys
from pcidoc.model.capture import Capture
from pcidoc.model.facts import Gpu, Host, PcieLink
from pcidoc.model.measurements import ScalingMeasurement
from pcidoc.model.report import Evidence
out = {}
g = Gpu(index=3, bus_id="0000:17:00.0", name="NVIDIA H100", pcie={"max_gen": 5})
out["dump"] = g.model_dump()
out["dump_json"] = g.model_dump_json(by_alias=True, indent=2)
out["serializer_bytes"] = Gpu.__pydantic_serializer__.to_json(g, by_alias=True, indent=2).decode()
out["fields_set"] = sorted(g.model_fields_set)
out["fields"] = list(Gpu.model_fields)
out["label"] = g.label
c = g.model_copy(update={"name": "X"})
out["copy"] = [c.name, g.name, sorted(c.model_fields_set)]
d = g.model_copy(deep=True)
d.pcie.max_gen = 4
out["deep"] = [g.pcie.max_gen, d.pcie.max_gen]
out["eq"] = [g == Gpu.model_validate(g.model_dump()), g == c, g == 3]
g.name = "Y"
out["setattr_fields_set"] = "name" in g.model_fields_set
out["pickle"] = pickle.loads(pickle.dumps(g)) == g
out["copy_module"] = copy.copy(g) == g and copy.copy(g) is not g
errors = []
for bad in ({"index": "x"}, {}, {"index": 1, "pcie": {"max_gen": "fast"}}):
    try:
        Gpu.model_validate(bad)
    except Exception as exc:
        errors.append([type(exc).__name__, exc.errors(include_url=False)])
out["errors"] = errors
out["json_roundtrip"] = Gpu.model_validate_json(g.model_dump_json()) == g
out["construct"] = ScalingMeasurement.model_construct(points=None, backend="nccl").points
h = Host()
h.mark_unavailable("kernel", "not in the paste")
out["why"] = h.why("kernel")
out["evidence"] = Evidence(label="a", value=1.5, unit="GB/s").model_dump(mode="json")
empty = Capture.empty("import")
out["capture_json"] = empty.model_dump_json(by_alias=True, indent=2)
out["from_attributes"] = PcieLink.model_validate(g.pcie, from_attributes=True) == g.pcie
print(json.dumps(out, default=repr))
"""


def _check(setup: str = "") -> str:
    return _CHECK.format(setup=setup)


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full_env,
        check=False,
    )
    stream = proc.stderr if "sys.stderr)" in code else proc.stdout
    lines = stream.strip().splitlines()
    assert lines, proc.stderr[-2000:]
    return json.loads(lines[-1])


def _without_time(report: str) -> list[str]:
    return [line for line in report.splitlines() if '"generated_at"' not in line]


@pytest.fixture(scope="module")
def lite_check() -> dict:
    return _python(_check(), str(SAMPLE))


def test_check_runs_on_light_classes_without_importing_pydantic(lite_check: dict) -> None:
    assert lite_check["base"] == "LiteModel"
    assert lite_check["pydantic"] is False
    # The report is written by the engine's plain-data writer (pcidoc.model.litejson): the
    # pydantic_core package (~18 ms of start-up) is not imported either.
    assert lite_check["package"] is False
    # No module in sys.modules is a stand-in (pcidoc puts none there: issue 20).
    assert lite_check["stand_ins"] == []
    assert lite_check["code"] in (0, 1, 2)


def test_the_engine_type_table_is_the_real_one_where_pcidoc_is_used_as_a_library() -> None:
    out = _python(_LIBRARY_MISSING)
    assert out["any_uuid"] == '{"a":1,"c":"12345678-1234-5678-1234-567812345678"}'


def _any_fields(node: object, field: str | None = None) -> list[str | None]:
    """The field name above every ``{"type": "any"}`` node of a stored schema."""
    found: list[str | None] = []
    if isinstance(node, dict):
        if node.get("type") == "any":
            found.append(field)
        for key, value in node.items():
            inner = field
            if isinstance(value, dict) and value.get("type") in ("model-field", "typed-dict-field"):
                inner = key
            found += _any_fields(value, inner)
    elif isinstance(node, (list, tuple)):
        for value in node:
            found += _any_fields(value, field)
    return found


def test_the_only_untyped_fields_are_the_probe_conditions() -> None:
    """The only ``Any`` positions are the measurements' ``conditions``, which hold JSON-parsed
    values from the probes' children (validated by the parent, never trusted as types). A new
    ``Any`` field must hold JSON-native values too; add it here once it does."""
    assert compiled.lite_mode()
    fields = set()
    for cls in compiled.model_classes():
        fields.update(_any_fields(compiled.stored_entry(cls)["schema"]))
    assert fields == {"conditions"}


_TOPO = r"""
import contextlib, io, json, sys
from pcidoc.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["topo", "--json", "--from", sys.argv[1]])
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if "pydantic" in m)}))
"""


_DEMO_DIAGNOSIS = r"""
import json, sys
from pcidoc import doctor
from pcidoc.model.report import ReportSource
from pcidoc.samples import load_sample, sample_names
for name in sample_names():
    doctor.run(load_sample(name), ReportSource(kind="demo"), [], [], generated_at="x")
print(json.dumps({"modules": sorted(m for m in sys.modules if "pydantic" in m)}))
"""


def test_loading_and_diagnosing_need_only_the_engine() -> None:
    """What the TUI does before its first screen: load a capture and run the doctor."""
    out = _python(_DEMO_DIAGNOSIS)
    assert out == {"modules": ["pydantic_core._pydantic_core"]}


def test_topo_loads_pydantic_cores_engine_alone() -> None:
    """``topo --json`` validates with the engine; the package's ``__init__`` (its typed-dict
    ``core_schema`` module) is not worth its start-up time there. (A model's own serializer does
    load it: the engine reads ``pydantic_core.MISSING`` from the package; pcidoc's JSON goes
    through :mod:`pcidoc.model.litejson` instead.)"""
    out = _python(_TOPO, str(SAMPLE))
    assert out == {"code": 0, "modules": ["pydantic_core._pydantic_core"]}


_LATER_PYDANTIC = r"""
import json, sys
from pcidoc.model.capture import Capture
from pcidoc.model.compiled import core
engine = core()
import pydantic, pydantic_core

class Other(pydantic.BaseModel):
    n: int

caught = []
for make in (lambda: Other(n="x"), lambda: Capture.model_validate({"schema": 1})):
    try:
        make()
    except pydantic.ValidationError as exc:
        caught.append(type(exc).__name__)
print(json.dumps({"base": Capture.__mro__[2].__name__, "same": pydantic_core.SchemaValidator is
                  engine.SchemaValidator, "caught": caught, "n": Other(n="3").n}))
"""


def test_pydantic_imported_after_light_models_shares_their_engine() -> None:
    """A user's code may import pydantic after pcidoc's light models loaded the engine alone."""
    out = _python(_LATER_PYDANTIC)
    assert out["base"] == "LiteModel"
    assert out["same"] is True
    assert out["caught"] == ["ValidationError", "ValidationError"]
    assert out["n"] == 3


def test_pydantic_models_print_the_same_report(lite_check: dict) -> None:
    built = _python(_check(), str(SAMPLE), env={"PCIDOC_COMPILED_SCHEMAS": "0"})
    assert built["base"] == "BaseModel" and built["pydantic"] is True
    assert _without_time(built["report"]) == _without_time(lite_check["report"])
    assert built["code"] == lite_check["code"]


def test_the_report_is_the_same_when_pydantic_cores_package_is_loaded(lite_check: dict) -> None:
    """A process that imported ``pydantic_core`` first (a user's program) prints the same."""
    built = _python(_check("import pydantic_core"), str(SAMPLE))
    assert built["base"] == "LiteModel" and built["stand_ins"] == []
    assert _without_time(built["report"]) == _without_time(lite_check["report"])


_LIBRARY_MISSING = r"""
import json, sys
from pcidoc.model.report import Evidence
first = Evidence(label="a", value=1.0).model_dump_json()
import pydantic
from pydantic_core import MISSING

class WithMissing(pydantic.BaseModel):
    a: int = 1
    b: int | MISSING = MISSING

import typing, uuid

class WithAny(pydantic.BaseModel):
    a: int = 1
    c: typing.Any = uuid.UUID("12345678-1234-5678-1234-567812345678")

print(json.dumps({"first": first, "missing_left_out": WithMissing().model_dump_json(),
                  "any_uuid": WithAny().model_dump_json()}))
"""


def test_library_use_keeps_the_real_missing_sentinel() -> None:
    """pcidoc leaves pydantic's MISSING semantics intact for the user's own models."""
    out = _python(_LIBRARY_MISSING)
    assert out["missing_left_out"] == '{"a":1}'
    assert json.loads(out["first"])["label"] == "a"


_AFTER_CLI = r"""
import contextlib, io, json, sys
from pcidoc.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["check", "--json", "--from", sys.argv[1]])
before = "pydantic" in sys.modules
import pydantic

class Plain(pydantic.BaseModel):
    a: int
    b: list[str] = []

print(json.dumps({"before": before, "dump": Plain(a=1, b=["x"]).model_dump_json()}))
"""


def test_pydantic_works_in_a_process_after_pcidocs_command_line() -> None:
    out = _python(_AFTER_CLI, str(SAMPLE))
    assert out == {"before": False, "dump": '{"a":1,"b":["x"]}'}


def test_a_changed_model_source_means_pydantic_models(lite_check: dict) -> None:
    setup = "from pcidoc.model import compiled\ncompiled.source_digest = lambda name: 'changed'"
    built = _python(_check(setup), str(SAMPLE))
    assert built["base"] == "BaseModel"
    assert _without_time(built["report"]) == _without_time(lite_check["report"])


def test_a_store_of_another_pydantic_core_means_pydantic_models(tmp_path: Path) -> None:
    lines = Path(compiled.STORE_FILE).read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    header["pydantic_core"] = "0.0.1"
    other = tmp_path / "compiled.jsonl"
    other.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    setup = (
        "from pathlib import Path\nfrom pcidoc.model import compiled\n"
        f"compiled.STORE_FILE = Path({str(other)!r})"
    )
    assert _python(_check(setup), str(SAMPLE))["base"] == "BaseModel"


def test_the_model_api_behaves_the_same_in_both_modes() -> None:
    lite = _python(_API)
    pyd = _python(_API, env={"PCIDOC_COMPILED_SCHEMAS": "0"})
    assert lite == pyd
    assert lite["errors"] and all(kind == "ValidationError" for kind, _ in lite["errors"])
    assert lite["deep"] == [5, 4] and lite["eq"] == [True, False, False]
    assert lite["serializer_bytes"] == lite["dump_json"]


def test_encode_round_trips_classes_methods_and_tuples() -> None:
    from pcidoc.model.facts import Gpu

    node = {"cls": Gpu, "factory": list, "pair": (1, "a"), "ref": "pcidoc.model.facts.Gpu:1234"}
    text = json.dumps(compiled.encode(node))
    back = json.loads(text, object_hook=compiled._decode)
    assert back["cls"] is Gpu and back["factory"] is list
    assert back["pair"] == (1, "a")
    assert back["ref"] == "pcidoc.model.facts.Gpu"


def test_stored_entries_decode_at_their_tag_paths() -> None:
    from pcidoc.model.facts import Gpu

    nested = {"a": [{"pair": ({"cls": Gpu}, 2)}], "b": {"$tuple": [1]}, "c": {"x": list}}
    encoded = compiled.encode(nested)
    text = "\n".join(
        [
            json.dumps({"pydantic_core": "", "sources": {}, "lines": {"k": 1}}),
            json.dumps({**encoded, "$tags": compiled.tag_paths(encoded)}),
        ]
    )
    store = compiled._Store(io.BytesIO(text.encode("ascii")))
    assert store.entry("k") == {"a": [{"pair": ({"cls": Gpu}, 2)}], "b": (1,), "c": {"x": list}}


def test_the_store_reads_the_class_lines_and_the_json_schemas_only_when_asked() -> None:
    with open(compiled.STORE_FILE, "rb") as handle:
        whole = handle.read().split(b"\n")
        handle.seek(0)
        store = compiled._Store(handle)
        classes = [k for k in store.lines if not k.startswith("json-schema:")]
        last = max(store.lines[k] for k in classes)
        assert last < len(whole) - 2  # JSON Schema lines follow the class lines
        assert handle.tell() == sum(len(line) + 1 for line in whole[: last + 1])  # not read
    assert len(store.raw) == last + 1
    assert all(store.raw[store.lines[k]] == whole[store.lines[k]] for k in classes)
    from pcidoc.model.capture import Capture

    schema = store.entry("json-schema:" + compiled.class_key(Capture))
    assert schema is not None and schema["title"] == "Capture"
    assert store.raw == whole


_PYDANTIC_ENTRIES = r"""
import json
from pcidoc.model import compiled
print(json.dumps(compiled.encoded_entries(compiled.model_classes())))
"""


def _without_methods(node: object) -> object:
    """pydantic's JSON Schema hooks decode to None in light mode (metadata only)."""
    if isinstance(node, dict):
        if set(node) == {"$method"}:
            return None
        return {key: _without_methods(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_without_methods(value) for value in node]
    return node


def test_every_decoded_entry_is_the_schema_pydantic_builds() -> None:
    """Shared model schemas (``$schema-of``) and tagged nodes decode to exactly what pydantic
    builds for each class, while each shared schema is parsed once."""
    built = _python(_PYDANTIC_ENTRIES, env={"PCIDOC_COMPILED_SCHEMAS": "0"})
    assert compiled.lite_mode()
    store = compiled._store
    assert store is not None
    assert set(built) == {key for key in store.lines if not key.startswith("json-schema:")}
    for key, entry in built.items():
        decoded = store.entry(key)
        assert decoded is not None
        assert compiled.encode(decoded) == _without_methods(entry), key
    report = store.entry("pcidoc.model.report:Report")
    machine = report["schema"]["schema"]["schema"]["fields"]["machine"]["schema"]  # type: ignore[index]
    assert machine is store.model_schema("pcidoc.model.capture:Capture")
    # The store holds each class's schema once: far less than what pydantic inlines.
    raw = Path(compiled.STORE_FILE).stat().st_size
    assert raw < 0.6 * len(json.dumps(built))


def test_encode_refuses_what_it_cannot_name() -> None:
    with pytest.raises(TypeError):
        compiled.encode({"default_factory": lambda: []})


def test_model_modules_take_nothing_from_pydantic_but_the_base() -> None:
    # A model module importing pydantic directly (Field, a validator) would bypass LiteModel:
    # its classes would not match the stored schemas' behaviour in the light runtime.
    offenders = []
    for name in compiled._MODULES:
        if name in ("pcidoc.model.base", "pcidoc.model.lite"):
            continue
        path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("from pydantic", "import pydantic")):
                offenders.append(f"{name}: {line.strip()}")
    assert offenders == []
