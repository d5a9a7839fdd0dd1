"""Fuzzing: damaged pastes never crash the importer and always give a valid capture."""

from __future__ import annotations

import contextlib
import json
import math
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcidoc.collect.importers import import_texts
from pcidoc.errors import PcidocError
from pcidoc.model.capture import Capture
from pcidoc.model.cpulist import parse_cpulist
from pcidoc.sanitize import has_controls
from tests.importers import (
    test_bandwidth_test,
    test_merge,
    test_nccl_tests,
    test_nvbandwidth,
    test_nvlink,
    test_p2p_test,
    test_query,
    test_topo,
)
from tests.importers.kineto import TraceBuilder


def _trace() -> str:
    trace = TraceBuilder(world_size=2)
    trace.step(1, 0.0, 100.0)
    trace.kernel("ncclDevKernel_AllReduce", 10.0, 30.0, stream=9)
    trace.kernel("gemm", 20.0, 50.0)
    trace.memcpy("Memcpy HtoD (Pinned -> Device)", 0.0, 5.0, size=4096)
    return trace.text()


SNIPPETS = [
    test_topo.MODERN_TAB,
    test_merge.TOPO + test_merge.LEGEND,
    test_query.FULL,
    test_nvlink.STATUS,
    test_p2p_test.OUTPUT,
    test_bandwidth_test.run(),
    test_nccl_tests.SINGLE_NODE,
    test_nvbandwidth.HEADER + test_nvbandwidth.H2D + test_nvbandwidth.D2D_READ,
    "$ nvidia-smi topo -p2p rw\n        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      X\n",
    _trace(),
]

CONTROL = st.sampled_from(
    [
        "\x1b]0;pwned\x07",
        "\x1b]52;c;cHduZWQ=\x1b\\",
        "\x1bc",
        "\x1b(0",
        "\x1bP+q\x1b\\",
        "\x1b[2J",
        "\x9b31m",
        "\x9d0;x\x9c",
        "\x1b]8;;x",
        "\r",
        "\x08",
        "\x00",
        "\x7f",
        "\u202e",
        "\x1b",
    ]
)
"""Terminal control sequences of every family (must never survive into the capture)."""

HUGE = st.sampled_from(
    ["0-999999999", "0-8192", "999999999999999999999", "GPU99999999", "1e999", "inf", "nan",
     "NaN", "-Infinity", "0x" + "f" * 64, "9" * 400, "-0", "1e-400"]
)  # fmt: skip
"""Ranges, counts and numbers no real machine prints."""

GARBAGE = st.text(
    alphabet=st.sampled_from(list("GPUNICX0123456789.-:#|[]()>/ \tSYSPIXOKNV=eE,abc")),
    max_size=40,
)


@st.composite
def damaged(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SNIPPETS))
    lines = text.split("\n")
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        op = draw(
            st.sampled_from(
                ["drop", "dup", "garbage", "tabs", "cut", "swap", "strip", "control", "huge"]
            )
        )
        pos = draw(st.integers(0, len(lines) - 1))
        if op == "drop":
            del lines[pos]
        elif op == "dup":
            lines.insert(pos, lines[pos])
        elif op == "garbage":
            lines.insert(pos, draw(GARBAGE))
        elif op == "tabs":
            lines[pos] = (
                lines[pos].replace(" ", "\t")
                if draw(st.booleans())
                else (lines[pos].replace("\t", "  "))
            )
        elif op == "cut":
            line = lines[pos]
            lines[pos] = line[: draw(st.integers(0, max(0, len(line))))]
        elif op == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[pos], lines[other] = lines[other], lines[pos]
        elif op == "strip":
            lines[pos] = lines[pos].lstrip()
        elif op in ("control", "huge"):
            line = lines[pos]
            cut = draw(st.integers(0, len(line)))
            insert = draw(CONTROL if op == "control" else HUGE)
            if op == "huge" and draw(st.booleans()):
                # Replace a number in place, where a parser expects one.
                tokens = line.split()
                if tokens:
                    k = draw(st.integers(0, len(tokens) - 1))
                    tokens[k] = insert
                    lines[pos] = " ".join(tokens)
                    continue
            lines[pos] = line[:cut] + insert + line[cut:]
    joined = "\n".join(lines)
    if draw(st.booleans()):
        joined = joined[: draw(st.integers(0, len(joined)))]
    return joined


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(texts=st.lists(damaged(), min_size=1, max_size=2))
def test_damaged_pastes_never_crash(texts: list[str]) -> None:
    items = [(f"f{i}.txt", text) for i, text in enumerate(texts)]
    try:
        result = import_texts(items)
    except PcidocError as error:
        message = error.message
        result = None
    if result is None:
        assert "\n" not in message
        return
    capture = result.capture
    assert capture.origin.kind == "import"
    assert len(capture.origin.sources) == len(items)
    dumped = capture.model_dump_json(by_alias=True)
    again = Capture.model_validate_json(dumped)
    assert again == capture
    _no_controls(json.loads(dumped))


def _no_controls(node: object) -> None:
    """No string of the capture (keys included) holds a terminal control sequence."""
    if isinstance(node, dict):
        for key, value in node.items():
            assert not has_controls(key), key
            _no_controls(value)
    elif isinstance(node, list):
        for value in node:
            _no_controls(value)
    elif isinstance(node, str):
        assert not has_controls(node), node
    elif isinstance(node, float):
        assert math.isfinite(node)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    try:
        result = import_texts([("any.txt", text)])
    except PcidocError:
        return
    Capture.model_validate_json(result.capture.model_dump_json(by_alias=True))
    _no_controls(result.capture.model_dump(mode="json"))


@settings(max_examples=100, deadline=None)
@given(
    name=st.lists(st.one_of(CONTROL, st.sampled_from(list("GPU0 H100-xyz"))), max_size=12).map(
        "".join
    ),
    affinity=st.one_of(HUGE, st.sampled_from(["0-47", "0-23,48-71", "N/A"])),
    link=st.sampled_from(["NV18", "SYS", "PIX", "X1", "NV99999999999"]),
)
def test_topology_cells_with_hostile_values(name: str, affinity: str, link: str) -> None:
    """A well-formed topo -m whose cells carry control sequences and absurd ranges."""
    text = (
        "$ nvidia-smi topo -m\n"
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n"
        f"GPU0\t X \t{link}\tSYS\t{affinity}\t0\n"
        f"GPU1\t{link}\t X \tSYS\t{affinity}\t{affinity}\n"
        "NIC0\tSYS\tSYS\t X \n\nNIC Legend:\n\n"
        f"  NIC0: {name}\n"
    )
    try:
        result = import_texts([(f"t{name}.txt", text)])
    except PcidocError as error:
        message = error.message
        result = None
    if result is None:
        assert "\n" not in message and not has_controls(message)
        return
    data = result.capture.model_dump(mode="json")
    _no_controls(data)
    for gpu in result.capture.gpus:
        assert (
            parse_cpulist(gpu.cpu_affinity) is None
            or max(parse_cpulist(gpu.cpu_affinity) or {0}) < 8192
        )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]),
        CONTROL,
        st.lists(st.one_of(CONTROL, st.sampled_from(list("ab[]/"))), max_size=10).map("".join),
        st.integers(min_value=-(10**30), max_value=10**30),
    ),
    field=st.sampled_from(
        [("host", "uptime_s"), ("host", "hostname"), ("host", "logical_cpus"),
         ("gpus", "name"), ("gpus", "cpu_affinity"), ("gpus", "tx_bytes_per_s"),
         ("gpus", "index"), ("origin", "note")]
    ),
)  # fmt: skip
def test_capture_loading_with_hostile_values(value: object, field: tuple[str, str]) -> None:
    """Capture loading: one-line error or a capture that saves and reloads unchanged."""
    import tempfile

    from pcidoc.collect.capture import capture_text, load_capture
    from tests.builders import machine

    base = json.loads(capture_text(machine(2, link="NV4")))
    section, key = field
    target = base[section][0] if section == "gpus" else base[section]
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity", "1e999", "-1e999"):
        target[key] = "@@"
        text = json.dumps(base).replace('"@@"', value)
    else:
        target[key] = value
        text = json.dumps(base)  # writes nan/inf as NaN/Infinity, like a careless tool
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/c.json"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            capture = load_capture(path)
        except PcidocError as error:
            message = error.message
            capture = None
        if capture is None:
            assert "\n" not in message and not has_controls(message)
            return
        _no_controls(capture.model_dump(mode="json"))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(capture_text(capture))
        assert load_capture(path) == capture


LONG_RUN = " " * 20000
PATHOLOGICAL = [
    "Product Name" + LONG_RUN + "x",
    "Fabric" + LONG_RUN + "x\n    State : Completed",
    "GPU 0: a" + LONG_RUN + "b\n  Link 0: 1 GB/s",
    "GPU 0: a (UUID: GPU-1)\n  Link 0: A" + LONG_RUN + "x: 1",
    "[CUDA Bandwidth Test]\n Device 0: a" + LONG_RUN + "b",
    "nvbandwidth Version: v1\nDevice 0: a" + LONG_RUN + "b",
    "#  Rank  0 Group  0 Pid 1 on h device  0 [x] a" + LONG_RUN + "b",
    "Device: 0, a," + LONG_RUN + "b",
    "| NVIDIA-SMI 1.0  Driver Version: 1.0  CUDA Version: 1.0 |\n| 0 a" + LONG_RUN + "b |",
    "GPU0" + LONG_RUN + "GPU1 CPU Affinity\nGPU0 X PIX 0-1",
    "$" + LONG_RUN + "./x -a" + LONG_RUN + "b",
    "-a" * 20000,
    "1 " * 20000,
    "   0 " + "1.0 " * 20000 + "x",
]


def test_long_lines_stay_linear() -> None:
    """Inputs that make backtracking regexes quadratic (minutes) import in well under a second."""
    start = time.perf_counter()
    for text in PATHOLOGICAL:
        with contextlib.suppress(PcidocError):
            import_texts([("long.txt", text)])
    assert time.perf_counter() - start < 5.0
