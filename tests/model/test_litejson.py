"""The JSON of light models written without the ``pydantic_core`` package
(:mod:`pcidoc.model.litejson`) is, byte for byte, what each model's own serializer writes."""

from __future__ import annotations

import enum
import warnings
from typing import Any

import pytest

from pcidoc import doctor
from pcidoc.model import compiled, litejson
from pcidoc.model.facts import Gpu, Host
from pcidoc.model.lite import LiteModel
from pcidoc.model.report import Evidence, Report, ReportSource
from pcidoc.samples import load_sample, sample_names

pytestmark = pytest.mark.skipif(not compiled.lite_mode(), reason="light models not in use")


class _Level(enum.IntEnum):
    TWO = 2


ODD_VALUES: list[Any] = [
    None, True, False, 0, 5, -3, 2**70, _Level.TWO, 1.5, -0.0, 1e16, 1e-7, 5e-5, 123456789.125,
    float("nan"), float("inf"), float("-inf"), "", 'é"\\\x01\x1f\x7f\u2028 ☃ \U0001f600',
    "0000:17:00.0", [], [1, 2.5, True, None, "x"], [[None, "NV12"]], (1, 2), {}, {"k": 1},
    {"k": [1.0, 2]}, {3: "x"}, Evidence(label="a", value=1),
]  # fmt: skip
"""Values of every JSON type and edge (and of the wrong type for most fields, as an unvalidated
assignment could leave them): each is put into every field of every model class."""


def _engine(model: LiteModel, indent: int | None, by_alias: bool) -> bytes | str:
    """The model's own serializer's bytes, or its error's text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the serializer warns about values of the wrong type
        try:
            return type(model).__pydantic_serializer__.to_json(
                model, indent=indent, by_alias=by_alias
            )
        except Exception as exc:  # compared with the other writer's
            return f"{type(exc).__name__}: {exc}"


def _plain(model: LiteModel, indent: int | None, by_alias: bool) -> bytes | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback to the serializer may warn too
        try:
            return litejson.json_bytes(model, indent=indent, by_alias=by_alias)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("name", sample_names())
def test_every_samples_capture_and_report_are_written_alike(name: str) -> None:
    capture = load_sample(name)
    report = doctor.run(capture, ReportSource(kind="demo", name=name), [], [], generated_at="x")
    for model in (capture, report):
        for indent, by_alias in ((2, True), (None, True), (2, False)):
            expected = _engine(model, indent, by_alias)
            assert isinstance(expected, bytes)
            assert _plain(model, indent, by_alias) == expected


def _classes() -> list[type]:
    return compiled.model_classes() if compiled.lite_mode() else []


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_odd_values_in_every_field_are_written_alike(cls: type) -> None:
    assert issubclass(cls, LiteModel)
    for field in cls.model_fields:
        for value in ODD_VALUES:
            model = cls.model_construct()
            model.__dict__[field] = value  # (a field may be named ``cls``)
            for by_alias in (True, False):
                expected = _engine(model, 2, by_alias)
                assert _plain(model, 2, by_alias) == expected, (field, value, by_alias)


def test_values_the_serializer_converts_are_converted() -> None:
    """The cases where the writer of plain data alone would write something else: an int in a
    float field, a bool in an int field (what the test above relies on being covered)."""
    gpu = Gpu.model_construct(index=True)
    text = litejson.json_bytes(gpu, indent=None).decode()
    assert '"index":1,' in text and text.encode() == _engine(gpu, None, False)
    host = Host.model_construct(uptime_s=7, sockets=False)
    text = litejson.json_bytes(host, indent=None).decode()
    assert '"uptime_s":7.0,' in text and '"sockets":0,' in text
    assert text.encode() == _engine(host, None, False)


def test_an_attribute_that_is_no_field_is_left_to_the_serializer() -> None:
    gpu = Gpu(index=0)
    object.__setattr__(gpu, "scratch", 1)  # in __dict__, where the serializer skips it
    assert "scratch" in gpu.__dict__
    written = litejson.json_bytes(gpu, indent=2)
    assert b"scratch" not in written
    assert written == _engine(gpu, 2, False)


def test_the_report_of_check_is_written_without_the_package() -> None:
    """The point of the module: ``check --json`` never imports the ``pydantic_core`` package
    (tests/test_compiled_schemas.py checks it in a fresh process); here, that the plain path
    and not the fallback wrote the report."""
    report = doctor.run(
        load_sample("h800-8gpu-hgx"), ReportSource(kind="demo"), [], [], generated_at="x"
    )
    dump = litejson._model_dumper(Report, litejson._model_node(Report), {}, True)
    data = dump(report)
    assert isinstance(data, dict) and next(iter(data)) == "schema"
    assert isinstance(data["machine"]["gpus"][0], dict)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "int", "serialization": {"type": "to-string"}},
        {"type": "datetime"},
        {"type": "tuple", "items_schema": []},
        {"type": "union", "choices": [{"type": "str"}, {"type": "list"}]},
        {"type": "dict", "keys_schema": {"type": "tuple"}, "values_schema": {"type": "int"}},
        {"type": "definition-ref", "schema_ref": "nowhere"},
    ],
)
def test_a_construct_it_does_not_know_is_left_to_the_serializer(schema: dict[str, Any]) -> None:
    with pytest.raises(litejson._Unsupported):
        litejson._converter(schema, {}, True)


@pytest.mark.parametrize(
    "change",
    [
        {"computed_fields": [{"type": "computed-field", "property_name": "x"}]},
        {"extras_schema": {"type": "int"}},
    ],
)
def test_a_model_it_does_not_know_is_left_to_the_serializer(change: dict[str, Any]) -> None:
    node = litejson._model_node(Evidence)
    changed = {**node, "schema": {**node["schema"], **change}}
    with pytest.raises(litejson._Unsupported):
        litejson._model_plan(changed, {}, True)
    field = dict(node["schema"]["fields"]["label"], serialization_exclude=True)
    excluded = {**node, "schema": {**node["schema"], "fields": {"label": field}}}
    with pytest.raises(litejson._Unsupported):
        litejson._model_plan(excluded, {}, True)
    with pytest.raises(litejson._Unsupported):
        litejson._model_plan({**node, "config": {"ser_json_inf_nan": "strings"}}, {}, True)
