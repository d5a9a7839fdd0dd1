"""Terminal presenter: render_report, render_topology and make_console."""

from __future__ import annotations

import io
import re

import pytest

from pcidoc.doctor.topology_notes import topology_notes
from pcidoc.model import CheckResult, Report, ReportSource
from pcidoc.present.text import make_console, render_report, render_topology
from tests.builders import machine
from tests.present.fixtures import eight_gpu_capture, small_report

ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOUR_SGR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;[25];[0-9;]+)(?:;[0-9;]*)?m")

ORDER = [
    "p2p.acs-iommu",
    "scaling.allreduce",
    "pcie.link-speed",
    "numa.nic-affinity",
    "nvml.health",
    "transfer.pinned",
    "transfer.pageable",
]


def plain(report: Report, verbose: bool = False, width: int = 100) -> str:
    out = io.StringIO()
    render_report(report, make_console(out, width=width), verbose=verbose)
    return out.getvalue()


def topo(cap, width: int = 100, source: ReportSource | None = None) -> str:
    out = io.StringIO()
    render_topology(cap, make_console(out, width=width), source=source, notes=topology_notes(cap))
    return out.getvalue()


def coloured(render, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    render(make_console(out, width=100, force_terminal=True))
    return out.getvalue()


# ------------------------------------------------------------------------------ report


def test_header_names_machine_source_version_and_time() -> None:
    lines = plain(small_report()).splitlines()
    assert lines[0] == "testhost · 8 × NVIDIA H100 80GB HBM3 · driver 550.54.15 · CUDA 12.4"
    assert lines[1] == (
        "source: capture: h100-synthetic.json (synthetic data) · pcidoc 0.0.0-test · "
        "2024-05-01T12:00:00Z"
    )


def test_one_line_per_check_worst_first_with_marks() -> None:
    text = plain(small_report())
    rows = [line for line in text.splitlines() if re.match(r"^[✗●!i✓-] \w+ +\S", line)]
    assert [row.split()[2] for row in rows] == ORDER
    marks = [row.split()[0] + " " + row.split()[1] for row in rows]
    assert marks == [
        "✗ fail",
        "● error",
        "! warn",
        "i info",
        "✓ pass",
        "- skip",
        "- skip",
    ]


def test_summary_and_footer() -> None:
    text = plain(small_report())
    assert "Summary: 1 fail · 1 error · 1 warn · 1 info · 1 pass · 2 skip  (7 checks)" in text
    assert "Exit code 2: at least one check failed." in text
    assert "Evidence and every step: `pcidoc check --verbose`" in text
    assert "Share it: `pcidoc check -o report.md` (or .html, .json)" in text


def test_first_remediation_step_of_worst_findings_only() -> None:
    text = plain(small_report())
    block = text.split("What to do first\n", 1)[1].split("\n\n", 1)[0]
    assert block.splitlines() == [
        "✗  p2p.acs-iommu      Disable ACS redirect: `sudo setpci -s 41:00.0 ECAP_ACS+0x6.w=0000`.",
        "●  scaling.allreduce  Please report this with the capture (`pcidoc capture --redact`).",
        "!  pcie.link-speed    Reseat GPU2 or move it to another slot; check "
        "`nvidia-smi -q -i 2 -d PCIE`.",
    ]
    assert "Make it permanent" not in text  # second steps only with --verbose
    assert "GPU2: pinned H2D" not in text  # evidence only with --verbose


def test_skipped_checks_are_counted_with_a_hint() -> None:
    text = plain(small_report())
    assert (
        "2 checks were skipped for lack of input; `pcidoc check --verbose` says what each needs."
        in text
    )
    assert "Needs:" not in text


def test_many_skipped_checks_fold_into_one_row() -> None:
    report = small_report()
    for check_id in ("env.nccl", "env.virtualization", "pcie.errors"):
        report.checks.append(
            CheckResult(id=check_id, title=check_id, severity="skip", summary="not captured")
        )
    lines = plain(report, width=160).splitlines()
    skips = [line for line in lines if line.startswith("- skip")]
    assert len(skips) == 1
    assert skips[0].split()[:4] == ["-", "skip", "5", "checks"]
    assert "no input: env×2, pcie.errors, transfer×2" in skips[0]
    assert "skipped for lack of input" not in "\n".join(lines)
    assert "5 checks" not in plain(report, verbose=True)


def test_imported_capture_without_host_name_is_called_so() -> None:
    report = small_report()
    report.machine.host.hostname = None
    report.machine.origin.kind = "import"
    assert plain(report).splitlines()[0].startswith("imported capture · 8 × NVIDIA H100")


def test_long_summaries_wrap_and_are_never_cut() -> None:
    report = small_report()
    for check in report.checks:
        check.summary = f"{check.severity} " + "word " * 40 + "END"
    for verbose in (False, True):
        text = plain(report, width=80, verbose=verbose)
        lines = text.splitlines()
        assert "…" not in text
        assert all(len(line) <= 80 for line in lines)
        assert text.count("END") >= len(report.checks)
    lines = plain(report, width=80).splitlines()
    rows = {line.split()[2]: i for i, line in enumerate(lines) if re.match(r"^[✗●!i✓-] ", line)}
    for check_id in ("nvml.health", "transfer.pinned", "numa.nic-affinity"):
        # Continuation lines stay in the summary column.
        assert lines[rows[check_id] + 1].startswith(" " * 28)


def test_verbose_evidence_and_steps_wrap_under_their_text() -> None:
    report = small_report()
    check = next(c for c in report.checks if c.evidence)
    check.evidence[0].label = "long " * 30 + "LABEL-END"
    check.remediation = ["step " * 30 + "STEP-END", "second"]
    lines = plain(report, verbose=True, width=80).splitlines()
    first = next(i for i, line in enumerate(lines) if re.match(r"^      • \S+: long", line))
    end = next(i for i, line in enumerate(lines) if "LABEL-END" in line)
    assert end > first and all(
        line.startswith(" " * 8 + "long") for line in lines[first + 1 : end + 1]
    )
    step = next(i for i, line in enumerate(lines) if line.startswith("      1. step"))
    end = next(i for i, line in enumerate(lines) if "STEP-END" in line)
    assert end > step and all(
        line.startswith(" " * 9 + "step") for line in lines[step + 1 : end + 1]
    )
    assert "      2. second" in lines


def test_verbose_shows_evidence_all_steps_and_confidence() -> None:
    text = plain(small_report(), verbose=True)
    assert "! warn pcie.link-speed — PCIe link speed  (confidence medium)" in text
    assert "      • GPU2: pinned H2D: 3.1 GB/s" in text
    assert "      2. Make it permanent with a boot script; not applicable inside a VM." in text
    assert "    Needs: run `pcidoc check --probes quick` on the GPU machine" in text
    assert "What to do first" not in text
    assert "--verbose" not in text


def test_exit_code_meaning_follows_worst() -> None:
    report = small_report()
    report.checks = [c for c in report.checks if c.severity in ("warn", "pass")]
    report.summary = {"warn": 1, "pass": 1}
    report.worst = "warn"
    assert "Exit code 1: warnings, no failures." in plain(report)
    report.checks = [c for c in report.checks if c.severity == "pass"]
    report.summary = {"pass": 1}
    assert "Exit code 0: nothing worse than info." in plain(report)


def test_empty_report() -> None:
    report = small_report()
    report.checks, report.summary = [], {}
    text = plain(report)
    assert "Summary: no checks ran  (0 checks)" in text


def test_long_summaries_wrap_inside_their_column() -> None:
    report = small_report()
    report.checks[3].summary = "word " * 40
    text = plain(report, width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    fail_rows = [i for i, line in enumerate(text.splitlines()) if "p2p.acs-iommu" in line]
    continuation = text.splitlines()[fail_rows[0] + 1]
    assert continuation.startswith(" " * 28)
    assert continuation.strip()


def test_plain_output_has_no_escape_codes() -> None:
    assert "\x1b[" not in plain(small_report(), verbose=True)
    assert "\x1b[" not in topo(eight_gpu_capture())


def test_colour_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    text = coloured(lambda c: render_report(small_report(), c), monkeypatch)
    assert "\x1b[1;31m✗ fail" in text  # bold red
    assert "\x1b[1;33m! warn" in text  # bold yellow
    assert "`" not in ANSI.sub("", text).split("What to do first")[1].split("Exit code")[0]


def test_no_color_env_removes_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    render_report(small_report(), make_console(out, width=100, force_terminal=True))
    render_topology(eight_gpu_capture(), make_console(out, width=100, force_terminal=True))
    text = out.getvalue()
    assert not COLOUR_SGR.search(text)
    assert "✗ fail" in text  # the meaning survives without colour


def test_markup_in_capture_strings_is_printed_literally() -> None:
    cap = eight_gpu_capture()
    cap.host.hostname = "[bold red]host[/] <script>"
    report = small_report(cap)
    report.checks[0].summary = "name [link=http://x]click[/link]"
    text = plain(report)
    assert "[bold red]host[/] <script>" in text
    assert "name [link=http://x]click[/link]" in text


def test_make_console_width_when_not_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(io.StringIO()).width == 100
    monkeypatch.setenv("COLUMNS", "72")
    assert make_console(io.StringIO()).width == 72
    assert make_console(io.StringIO(), width=50).width == 50


def test_ascii_stream_gets_ascii_marks_and_does_not_crash() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    render_report(small_report(), make_console(stream, width=100))
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert "X fail   p2p.acs-iommu" in text
    assert "E error  scaling.allreduce" in text


# ---------------------------------------------------------------------------- topology


def test_topology_full_matrix() -> None:
    text = topo(eight_gpu_capture(), source=ReportSource(kind="demo", name="h100"))
    lines = text.splitlines()
    assert lines[0] == "testhost · 8 × NVIDIA H100 80GB HBM3 · driver 550.54.15 · CUDA 12.4"
    assert lines[1] == "source: demo: h100 (synthetic data) · matrix from synthetic"
    header = next(line for line in lines if line.lstrip().startswith("GPU0"))
    assert header.split() == [
        *(f"GPU{i}" for i in range(8)),
        "NIC0",
        "NIC1",
        "NIC2",
        "NIC3",
        "CPU",
        "Affinity",
        "NUMA",
    ]
    gpu0 = next(line for line in lines if line.startswith("GPU0 "))
    assert gpu0.split() == ["GPU0", "X", *["NV18"] * 7, "PIX", "SYS", "SYS", "SYS", "0-47", "0"]
    nic3 = next(line for line in lines if line.startswith("NIC3 "))
    assert nic3.split() == ["NIC3", *["SYS"] * 6, "PIX", "SYS", "SYS", "SYS", "SYS", "X"]
    assert all(len(line) <= 100 for line in lines)
    assert all(line == line.rstrip() for line in lines)


def test_topology_legend_nics_and_notes() -> None:
    text = topo(eight_gpu_capture())
    legend = text.split("Legend\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in legend] == ["X", "NV18", "PIX", "SYS"]
    assert legend[1] == "NV18  a bonded set of 18 NVLinks"
    nics = text.split("NICs\n", 1)[1].split("\n\n", 1)[0]
    assert nics.split() == [f"{w}{i}" for i in range(4) for w in ("NIC", "mlx5_")]
    notes = text.split("Notable\n", 1)[1].splitlines()
    assert notes[0] == " • all 8 GPUs are NV18 to each other (full mesh through NVSwitch)"
    assert " • GPU1, GPU3, GPU5, GPU7 have no NIC at PIX/PXB distance" in notes


def test_topology_unknown_cell_is_question_mark() -> None:
    cap = machine(3, link="PHB")
    cap.topology.links[0][2] = None
    text = topo(cap)
    gpu0 = next(line for line in text.splitlines() if line.startswith("GPU0 "))
    assert gpu0.split()[:4] == ["GPU0", "X", "PHB", "?"]
    legend = text.split("Legend\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert legend[-1].split(maxsplit=1) == [
        "?",
        "unknown: the path between these devices was not reported",
    ]


def test_topology_colours_by_class(monkeypatch: pytest.MonkeyPatch) -> None:
    cap = machine(
        4,
        link="SYS",
        pairs={(0, 1): "NV12", (0, 2): "NV4", (1, 2): "PIX", (2, 3): "PHB", (1, 3): "NODE"},
    )
    text = coloured(lambda c: render_topology(cap, c), monkeypatch)
    # link classes have their own muted scale, never the verdict colours (red/yellow/green)
    assert "\x1b[1;38;5;110mNV12" in text  # the best NVLink class: bold slate blue
    codes = {}
    for cls in ("NV4", "PIX", "PHB", "NODE", "SYS"):
        match = re.search(r"\x1b\[([0-9;]+)m" + cls, text)
        assert match is not None, cls
        codes[cls] = match.group(1)
    assert len(set(codes.values())) == 5, codes  # each class its own shade
    for code in codes.values():
        assert code.startswith("38;5;"), code
        assert code not in ("31", "32", "33", "91", "92", "93", "1;31", "1;33"), code
    # farther PCIe paths are dimmer (a lower 256-colour grey index)
    greys = [int(codes[c].rsplit(";", 1)[1]) for c in ("PIX", "PHB", "NODE", "SYS")]
    assert greys == sorted(greys, reverse=True)


def test_topology_compact_for_16_gpus() -> None:
    cap = machine(16, link="NV6", nics=[f"NIC{i}" for i in range(10)], numa_nodes=2)
    text = topo(cap)
    lines = text.splitlines()
    assert "The matrix is wider than this terminal: one character per pair (key below)." in text
    assert all(len(line) <= 100 for line in lines)
    gpu_header = next(i for i, line in enumerate(lines) if line.strip().startswith("GPU"))
    assert lines[gpu_header + 1].strip() == "111111"
    assert lines[gpu_header + 2].strip() == "01234567 89012345  01234567 89"
    gpu0 = next(line for line in lines if line.startswith("GPU0 "))
    assert gpu0 == "GPU0  XNNNNNNN NNNNNNNN  SSSSSSSS SS"
    assert "N  NV6  a bonded set of 6 NVLinks" in text
    assert "GPUs 0-7   NUMA 0  CPUs 0-47" in text
    assert "GPUs 8-15  NUMA 1  CPUs 48-95" in text


def test_topology_compact_splits_into_blocks_on_narrow_console() -> None:
    cap = machine(72, link="NV18", nics=[f"NIC{i}" for i in range(4)])
    text = topo(cap, width=40)
    lines = text.splitlines()
    matrix = text.split("(key below).\n", 1)[1].split("\n\nCPU", 1)[0]
    assert all(len(line) <= 40 for line in matrix.splitlines())
    assert sum(1 for line in lines if line.startswith("GPU71 ")) > 1  # several column blocks
    gpu71 = "".join(line[6:] for line in lines if line.startswith("GPU71 ")).replace(" ", "")
    assert gpu71 == "N" * 71 + "X" + "SSSS"


def test_topology_multiple_nvlink_classes_get_distinct_codes() -> None:
    cap = machine(16, link="SYS", pairs={(0, 1): "NV2", (2, 3): "NV12", (4, 5): "NV18"})
    text = topo(cap)
    assert "N  NV18" in text
    assert "M  NV12" in text
    assert "2  NV2" in text


def test_topology_without_matrix() -> None:
    from pcidoc.model import Capture

    cap = Capture.empty("import")
    text = topo(cap)
    # Said once (the doctor's note says the same), with the way to see one.
    assert text.lower().count("no topology matrix") == 1
    assert "No topology matrix in this capture: no GPUs." in text
    assert "pcidoc topo --demo" in text


def test_topology_markup_injection_in_nic_name() -> None:
    cap = eight_gpu_capture()
    cap.nics[0].name = "[red]mlx5_0[/red]"
    assert "NIC0  [red]mlx5_0[/red]" in topo(cap)


def test_check_result_fixture_ids_are_catalogue_ids() -> None:
    from pcidoc.doctor.registry import CHECK_IDS

    assert {c.id for c in small_report().checks} <= set(CHECK_IDS)
    assert isinstance(small_report().checks[0], CheckResult)


@pytest.mark.parametrize(
    "cap",
    [
        eight_gpu_capture(),
        machine(3, link="PHB"),
        machine(12, link="NV12", nics=["NIC0", "NIC1"]),
        machine(2, link="SYS", gpu_fields={"cpu_affinity": "0-23,48-71,96-119,144-167"}),
    ],
)
def test_natural_width_matches_rich_measurement(cap) -> None:
    from rich.measure import Measurement

    from pcidoc.present._matrix import MatrixView
    from pcidoc.present.text import _full_table, natural_width

    console = make_console(io.StringIO(), width=1000)
    view = MatrixView(cap)
    assert (
        natural_width(view) == Measurement.get(console, console.options, _full_table(view)).maximum
    )


@pytest.mark.parametrize("width", [50, 60, 80, 100])
@pytest.mark.parametrize("name", ["a100-sxm4-8gpu-nvswitch", "h800-8gpu-hgx", "synthetic-72gpu"])
def test_header_lines_wrap_between_parts_not_inside_them(name: str, width: int) -> None:
    """ "8 × NVIDIA A100-SXM4-80GB" or "driver 525.105.17" never split across lines."""
    from pcidoc.doctor import run
    from pcidoc.present._common import gpu_models, versions_text
    from pcidoc.samples import load_sample

    capture = load_sample(name)
    report = run(capture, ReportSource(kind="demo", name=name), generated_at="2026-01-01T00:00:00Z")
    lines = plain(report, width=width).split("\n\n")[0].splitlines()  # the header block
    assert all(len(line) <= width for line in lines), lines
    assert not any(line.endswith("·") or line.startswith("·") for line in lines), lines
    from pcidoc import __version__

    for part in (gpu_models(capture), versions_text(capture), f"pcidoc {__version__}"):
        if part and len(part) <= width:
            assert any(part in line for line in lines), (part, lines)


def test_an_ascii_stream_gets_readable_typography_not_question_marks() -> None:
    """`8 x NVIDIA H800 - driver ...` on an ASCII terminal, where it used to be `8 ? ... ? ...`."""
    import codecs

    from pcidoc.present.ascii_fallback import FALLBACKS, register

    text = "8 × NVIDIA H800 · host↔device ≤ 2 µs … ™"
    assert codecs.encode(text, "ascii", register()) == (
        b"8 x NVIDIA H800 - host<->device <= 2 us ... ?"
    )
    assert (
        codecs.encode(text, "latin-1", register())
        .decode("latin-1")
        .startswith("8 × NVIDIA H800 · host<->device")
    )
    assert all(value.isascii() for value in FALLBACKS.values())
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    capture = eight_gpu_capture()
    render_topology(capture, make_console(stream, width=100))
    stream.flush()
    header = stream.buffer.getvalue().decode("ascii").splitlines()[0]  # type: ignore[attr-defined]
    assert "?" not in header and " x " in header, header


def test_what_to_do_first_lists_as_many_as_the_other_presenters() -> None:
    """One limit for every presenter (issue 29: the terminal listed 5, Markdown and HTML 6)."""
    from pcidoc.model import CheckResult
    from pcidoc.present._common import MAX_FIRST

    report = small_report()
    report.checks += [
        CheckResult(
            id=f"pcie.errors-{n}",
            title="t",
            severity="warn",
            summary=f"warning {n}",
            remediation=[f"fix {n}"],
        )
        for n in range(8)
    ]
    text = plain(report)
    worst = [c for c in report.checks if c.severity in ("fail", "error", "warn") and c.remediation]
    assert f"… and {len(worst) - MAX_FIRST} more (see --verbose)" in text
