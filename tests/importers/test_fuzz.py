"""Fuzzing: damaged pastes never crash the importer and always give a valid capture."""

from __future__ import annotations

import contextlib
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcidoc.collect.importers import import_texts
from pcidoc.errors import PcidocError
from pcidoc.model.capture import Capture
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
        op = draw(st.sampled_from(["drop", "dup", "garbage", "tabs", "cut", "swap", "strip"]))
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
    again = Capture.model_validate_json(capture.model_dump_json(by_alias=True))
    assert again == capture


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    try:
        result = import_texts([("any.txt", text)])
    except PcidocError:
        return
    Capture.model_validate_json(result.capture.model_dump_json(by_alias=True))


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
