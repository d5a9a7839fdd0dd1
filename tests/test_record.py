"""pcidoc._record builds, from the same class bodies, classes that behave as dataclasses do for
everything pcidoc uses: construction, defaults, factories, repr, equality, hashing, freezing."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any, ClassVar

import pytest

from pcidoc._record import FrozenRecordError, _field, _record


def _both(frozen: bool = False) -> list[Any]:
    """The same body decorated by dataclasses and by record."""
    made = []
    for decorate, fld in ((dataclasses.dataclass, dataclasses.field), (_record, _field)):

        class Hop:
            kind: str
            rate: float | None = None
            tags: list[str] = fld(default_factory=list)
            note: str = fld(default="n", repr=False)
            fn: Any = fld(default=None, compare=False)
            LIMIT: ClassVar[int] = 3

            def label(self) -> str:
                return f"{self.kind}@{self.rate}"

        made.append(decorate(frozen=frozen)(Hop))
    return made


@pytest.mark.parametrize("frozen", [False, True])
def test_records_construct_compare_and_print_as_dataclasses(frozen: bool) -> None:
    calls: list[tuple[tuple, dict]] = [
        (("pcie",), {}),
        (("nvlink", 25.0), {}),
        ((), {"kind": "pcie", "tags": ["a"], "note": "x"}),
        (("pcie", 1.0, ["b"], "y", len), {}),
    ]
    data, rec = _both(frozen)
    for args, kwargs in calls:
        a, b = data(*args, **kwargs), rec(*args, **kwargs)
        assert repr(a) == repr(b)
        assert vars(a) == vars(b)
        assert b.label() == a.label()
        assert b == rec(*args, **kwargs) and a == data(*args, **kwargs)
        assert (b == rec("other")) == (a == data("other"))
        if frozen:  # the hash of the compared fields' tuple, or unhashable for both
            try:
                expected = hash(a)
            except TypeError:
                with pytest.raises(TypeError):
                    hash(b)
            else:
                assert hash(b) == expected
    assert rec.LIMIT == 3 and "LIMIT" not in vars(rec("x"))
    # compare=False fields do not count; factories give each instance its own list
    assert rec("k", fn=len) == rec("k", fn=print)
    one, two = rec("k"), rec("k")
    one.tags.append("z")
    assert two.tags == []
    # class attributes are the defaults, as in a dataclass
    assert rec.rate is None and data.rate is None and rec.note == data.note == "n"


@pytest.mark.parametrize("frozen", [False, True])
def test_bad_calls_fail_as_they_do_for_dataclasses(frozen: bool) -> None:
    data, rec = _both(frozen)
    for args, kwargs in [((), {}), (("a",), {"bogus": 1}), (("a", 1, [], "n", None, "extra"), {})]:
        with pytest.raises(TypeError):
            data(*args, **kwargs)
        with pytest.raises(TypeError):
            rec(*args, **kwargs)


def test_frozen_records_refuse_assignment_and_mutable_ones_are_unhashable() -> None:
    @_record(frozen=True)
    class Key:
        kind: str
        rate: float = 1.0

    item = Key("pcie")
    with pytest.raises(FrozenRecordError):
        item.kind = "x"
    with pytest.raises(AttributeError):
        del item.kind
    assert {item: 1}[Key("pcie", 1.0)] == 1 and hash(item) == hash(("pcie", 1.0))
    _, mutable = _both(frozen=False)
    with pytest.raises(TypeError):
        hash(mutable("pcie"))
    thing = mutable("pcie")
    thing.kind = "nvlink"
    assert thing.kind == "nvlink"


def _base_and_child() -> tuple[type, type]:
    """A record class and a record subclass of it, new (their ``__init__`` not compiled yet)."""

    @_record(frozen=True)
    class Base:
        a: int
        b: int = 2

    @_record(frozen=True)
    class Child(Base):
        c: int = 3

    return Base, Child


def test_inheritance_and_field_order_rules() -> None:
    Base, Child = _base_and_child()
    assert repr(Child(1)) == "_base_and_child.<locals>.Child(a=1, b=2, c=3)"
    assert Child(1, c=4) != Base(1)  # another class: not equal, as dataclasses
    with pytest.raises(TypeError, match="non-default argument 'd'"):

        @_record
        class Bad:
            c: int = 1
            d: int


def test_pcidoc_records_do_not_import_dataclasses() -> None:
    code = (
        "import sys; import pcidoc.doctor.finding, pcidoc.doctor.registry, pcidoc.model.linkmodel,"
        " pcidoc.doctor.alpha_beta, pcidoc.fileio, pcidoc.collect.importers,"
        " pcidoc.present._matrix, pcidoc.present._sections;"
        " print('dataclasses' in sys.modules, 'inspect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_modules_with_record_classes_use_postponed_annotations() -> None:
    """Fields come from the class's __annotations__ dict, which Python 3.14 only builds eagerly
    under `from __future__ import annotations`."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "pcidoc"
    users = [p for p in root.rglob("*.py") if "pcidoc._record import" in p.read_text("utf-8")]
    assert len(users) >= 10
    missing = [
        str(p)
        for p in users
        if "\nfrom __future__ import annotations\n" not in p.read_text("utf-8")
    ]
    assert missing == []


@pytest.mark.parametrize("frozen", [False, True])
def test_post_init_runs_last_as_in_a_dataclass_also_when_inherited(frozen: bool) -> None:
    class Base:
        def __post_init__(self) -> None:
            object.__setattr__(self, "seen", (self.kind, self.state))  # type: ignore[attr-defined]

    made = []
    for decorate in (dataclasses.dataclass, _record):

        class Link(Base):
            kind: str
            up: bool | None = None
            state: str | None = None

            def __post_init__(self) -> None:
                if self.state is None and self.up is not None:
                    object.__setattr__(self, "state", "up" if self.up else "down")
                super().__post_init__()

        class Plain(Base):
            kind: str
            state: str = "idle"

        made.append((decorate(frozen=frozen)(Link), decorate(frozen=frozen)(Plain)))
    (data_link, data_plain), (rec_link, rec_plain) = made
    for args in (("nvlink",), ("nvlink", True), ("nvlink", False, "sleep")):
        assert vars(rec_link(*args)) == vars(data_link(*args))
    assert (
        vars(rec_plain("pcie"))
        == vars(data_plain("pcie"))
        == {
            "kind": "pcie",
            "state": "idle",
            "seen": ("pcie", "idle"),
        }
    )


def test_eq_false_keeps_identity_equality_and_hash_as_in_a_dataclass() -> None:
    for decorate in (dataclasses.dataclass, _record):

        @decorate(frozen=True, eq=False)
        class Shown:
            name: str

        a, b = Shown("x"), Shown("x")
        assert a != b and a == a
        assert hash(a) == object.__hash__(a)


def test_field_names_lists_the_fields_in_init_order() -> None:
    from pcidoc._record import field_names

    _data, rec = _both()
    assert field_names(rec) == ("kind", "rate", "tags", "note", "fn")


def test_init_is_compiled_at_the_first_construction_then_used_as_is() -> None:
    Base, Child = _base_and_child()
    placeholder = Base.__dict__["__init__"]
    assert Child(1, c=5) == Child(1, 2, 5)  # the child first: the base is still deferred
    assert Base.__dict__["__init__"] is placeholder
    with pytest.raises(TypeError):  # a bad first call compiles, then fails as a dataclass's
        Base()
    compiled = Base.__dict__["__init__"]
    assert compiled is not placeholder and compiled.__qualname__ == placeholder.__qualname__
    assert Base(7).b == 2 and Base.__dict__["__init__"] is compiled
    assert list(compiled.__code__.co_varnames[:3]) == ["self", "a", "b"]
