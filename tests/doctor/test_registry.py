"""The check table (``pcidoc.doctor.registry.CHECKS``): every check resolves to its module, and
the evidence-less skip the runner gives without running a check is the one the check's own code
returns on a capture without evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcidoc.collect.importers import import_texts
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import CHECKS, REGISTRY, bare_of, bare_skip, check, load_checks
from pcidoc.doctor.runner import merge_findings, run_check
from pcidoc.model.capture import Capture
from pcidoc.model.evidence import ImportedEvidence
from pcidoc.samples import load_sample, sample_names
from tests.builders import machine
from tests.conftest import read_realdata, realdata_dir

ROOT = Path(__file__).resolve().parents[2]
GATED = [spec for spec in CHECKS if spec.bare is not None]


def _own_result(spec_id: str, capture: Capture) -> object:
    """What the check's own function concludes (the runner's gate bypassed)."""
    spec = REGISTRY[spec_id]
    outcome = spec.function(Context(capture))
    return merge_findings(spec, outcome if isinstance(outcome, list) else [outcome])


def _evidence_less_captures() -> list[tuple[str, Capture]]:
    """Machines of every kind the project has (bundled samples, builders, every realdata paste
    that imports into facts), each with no evidence and with an empty evidence table."""
    captures = [(name, load_sample(name)) for name in sample_names()]
    captures += [(f"machine({n})", machine(n)) for n in (1, 2, 8)]
    for path in sorted(realdata_dir().rglob("*.txt")):
        relpath = str(path.relative_to(realdata_dir()))
        captures.append((relpath, import_texts([(relpath, read_realdata(relpath))]).capture))
    out: list[tuple[str, Capture]] = []
    for name, capture in captures:
        out.append((name, capture.model_copy(update={"evidence": None})))
        out.append(
            (
                f"{name} (empty evidence)",
                capture.model_copy(update={"evidence": ImportedEvidence()}),
            )
        )
    return out


def test_the_table_lists_the_contract_ids_once_each_in_catalogue_order() -> None:
    ids = [spec.id for spec in CHECKS]
    assert len(ids) == len(set(ids)) == 39
    assert ids[0] == "nvml.health" and ids[-1] == "log.signatures"
    assert all(spec.needs in ("facts", "probe") for spec in CHECKS)


def test_load_checks_resolves_every_check_to_a_function_of_its_own_module() -> None:
    registry = load_checks()
    assert list(registry) == [spec.id for spec in CHECKS]
    for spec in registry.values():
        assert spec.function.__module__ == spec.module


def test_registering_an_unknown_or_a_second_check_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown check id"):
        check("pcie.nonexistent")
    load_checks()
    with pytest.raises(ValueError, match="registered twice"):
        check("pcie.errors")(lambda ctx: [])


def test_checks_that_read_more_than_evidence_have_no_evidence_less_skip() -> None:
    with pytest.raises(LookupError):
        bare_of("nccl.nic-inventory")
    assert bare_skip("kernel.xid").summary == "no kernel log in the capture: Xid events unknown"


def test_the_gated_checks_are_the_evidence_readers() -> None:
    topics = {spec.id.split(".")[0] for spec in GATED}
    assert topics == {"nccl", "kernel", "log"}
    assert len(GATED) == 16


def test_each_gated_checks_own_code_gives_the_tables_skip_without_evidence() -> None:
    """The gate is exact: on every machine the project has, without evidence (and with an
    empty evidence table), each gated check's own function returns the table's skip."""
    captures = _evidence_less_captures()
    assert len(captures) > 100
    differ = []
    for name, capture in captures:
        for spec in GATED:
            gated = run_check(spec, Context(capture))
            if _own_result(spec.id, capture) != merge_findings(spec, [spec.bare.finding()]):
                differ.append((name, spec.id))
            elif capture.evidence is None and gated != _own_result(spec.id, capture):
                differ.append((name, spec.id, "runner"))
    assert not differ, differ[:10]


XID_79 = "[  100.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"


def test_with_evidence_the_gated_checks_run_their_own_code() -> None:
    capture = import_texts([("dmesg.txt", XID_79)]).capture
    assert capture.evidence is not None
    result = run_check(REGISTRY["kernel.xid"], Context(capture))
    assert result.severity == "fail" and "79" in result.summary


_LOADED = """
import json, sys
from pcidoc.cli import main
code = main(sys.argv[1:])
mods = sorted(m for m in sys.modules if m.startswith("pcidoc.doctor.checks."))
print(json.dumps(mods), file=sys.stderr)
"""


def _check_modules_loaded(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, cwd=ROOT
    )
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_check_json_without_evidence_does_not_load_the_evidence_checks() -> None:
    loaded = _check_modules_loaded("check", "--json", "--demo", "h800-8gpu-hgx")
    gated = {spec.module for spec in GATED}
    assert not loaded & gated
    ungated = {spec.module for spec in CHECKS if spec.bare is None}
    assert ungated <= loaded


def test_check_json_with_evidence_loads_them(tmp_path: Path) -> None:
    paste = tmp_path / "dmesg.txt"
    paste.write_text(XID_79)
    loaded = _check_modules_loaded("check", "--json", "--from", str(paste))
    assert {spec.module for spec in GATED} <= loaded
