"""What pasted outputs say about the bytes peer-to-peer copies deliver.

* cuda-samples ``simpleP2P``: ``Verification error @ element N: val = X, ref = Y`` lines
  (wrong data) or ``Test passed``, with the peer-copy bandwidth it printed;
* PyTorch sessions (REPL or script with its output): a tensor built from literal values, moved
  to another GPU (``x.to(1)``, ``.to("cuda:1")``, ``.cuda(1)``), printed back different (zeros,
  denormals), while the same values staged through the CPU (``.to("cpu").to(1)``) arrive
  intact;
* a table of GPUs with their IOMMU group and PCIe root complex next to a corrupted result (a
  multi-exabyte allocation, an integer overflow): the signature of peer DMA translated by the
  IOMMU across root complexes.
"""

from __future__ import annotations

from pcidoc._lazyre import lazy
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc, to_float, to_int
from pcidoc.collect.importers.walk import Walker, first_line
from pcidoc.model.runtime import P2PIntegrity

FORMAT = "p2p-integrity"

_VERIFY_RE = lazy(r"Verification error @ element (\d+): val = (\S+), ref = (\S+)")
_PASSED_RE = lazy(r"^\W*Test (passed|PASSED|failed|FAILED|FAIL)\b")
_BW_RE = lazy(r"cudaMemcpyPeer / cudaMemcpy between GPU(\d+) and GPU(\d+):\s*([\d.]+)\s*GB/s")
_LITERAL_RE = lazy(r"^(\w+)\s*=\s*torch\.tensor\(\s*\[([^\]]*)\]")
_MOVE_RE = lazy(
    r"(?<!\w)(\w+)\s*(?:\.\s*(?:to|cuda)\(\s*(?:device\s*=\s*)?['\"]?(?:cuda:)?(\d+)['\"]?\s*\)"
    r"|\.to\(\s*['\"]cpu['\"]\s*\))+"
)
_TARGET_RE = lazy(r"\.(?:to|cuda)\(\s*(?:device\s*=\s*)?['\"]?(?:cuda:)?(\d+)['\"]?\s*\)")
_OUTPUT_RE = lazy(r"^tensor\(\[([^\]]{0,2000})\](?:,\s*device='cuda:(\d+)')?")
_ASSIGN_RE = lazy(r"^(\w+)\s*=\s*(\w+)\s*\.\s*(?:to|cuda)\(")
_COMPARE_RE = lazy(r"torch\.(?:equal|allclose)\(|\.(?:equal|allclose)\(|==")
_PEER_RE = lazy(r"\.(?:to|cuda)\(\s*(?:device\s*=\s*)?['\"]?(?:cuda:)?\d")
_STAGED_RE = lazy(r"\.(?:to\(\s*['\"]cpu['\"]\s*\)|cpu\(\))\s*\.(?:to|cuda)\(")
_WORD_RE = lazy(r"\w+")
_CROSS_ASSIGN_RE = lazy(r"^(\w+)\s*=\s*(.+)$")
_BARS = str.maketrans({"│": "|", "┃": "|"})
_BDF_RE = lazy(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_HUGE_ALLOC_RE = lazy(
    r"(?:allocate|allocation of|alloc)\D{0,20}[\d.]+\s*(EiB|PiB|EB|PB)\b|~2\^6[34]"
)


def _number(text: str) -> float | None:
    try:
        return float(text.strip().rstrip(","))
    except ValueError:
        return None


def _values(text: str) -> list[float | None]:
    return [_number(v) for v in text.split(",") if v.strip()]


def _close(a: list[float | None], b: list[float | None]) -> bool:
    if len(a) != len(b) or any(x is None or y is None for x, y in zip(a, b, strict=False)):
        return False
    return all(abs(x - y) <= 1e-3 * max(1.0, abs(y)) for x, y in zip(a, b, strict=False))  # type: ignore[operator]


# ---------------------------------------------------------------------------- simpleP2P


def _simple_p2p(doc: Doc) -> P2PIntegrity | None:
    lines = doc.lines[:200000]
    errors = [
        (i, m)
        for i, line in enumerate(lines)
        if "Verification error" in line and (m := _VERIFY_RE.search(line))
    ]
    named = any("simpleP2P" in line or "peer to peer memory" in line for line in lines)
    if not errors and not named:
        return None
    verdict = next((m for line in lines if "Test" in line and (m := _PASSED_RE.match(line))), None)
    if not errors and not verdict:
        return None
    result = P2PIntegrity(tool="simpleP2P")
    for line in lines:
        bw = _BW_RE.search(line)
        if bw:
            result.src, result.dst = to_int(bw.group(1)), to_int(bw.group(2))
            result.bandwidth_gbps = to_float(bw.group(3))
    if errors:
        result.ok = False
        result.wrong = len(errors)
        result.quote = lines[errors[0][0]].strip()[:300]
        sample = errors[0][1]
        result.detail = (
            f"element {sample.group(1)} read {sample.group(2)}, expected {sample.group(3)}"
        )
    elif verdict:
        result.ok = verdict.group(1).lower() == "passed"
        result.quote = verdict.group(0).strip()
        result.detail = "simpleP2P " + ("verified its peer copies" if result.ok else "failed")
    return result


# ---------------------------------------------------------------------- PyTorch sessions


class _Session:
    """Literal tensors, and what the session printed after each move between devices."""

    def __init__(self) -> None:
        self.literals: dict[str, list[float | None]] = {}
        self.pending: tuple[str, bool, int, str] | None = None
        """(variable, staged through the CPU, target GPU, statement) awaiting its output."""
        self.results: list[tuple[bool, P2PIntegrity]] = []
        """(staged through the CPU, result)."""
        self.comparison: str | None = None
        """The last statement comparing tensors that crossed GPUs, awaiting True/False."""
        self.comparison_staged = False
        self.crossed: dict[str, bool] = {}
        """Variables holding data moved to a GPU -> whether it went through the CPU."""

    def line(self, raw: str) -> None:
        stripped = raw.strip().lstrip(">").strip()
        literal = _LITERAL_RE.match(stripped)
        if literal:
            self.literals[literal.group(1)] = _values(literal.group(2))
            self.pending = None
            return
        if stripped.startswith("tensor("):
            output = _OUTPUT_RE.match(stripped)
            if output and self.pending:
                self._judge(output.group(1), output.group(2))
            self.pending = None
            self._verdict(stripped)
            return
        if stripped in ("True", "False"):
            self._verdict(stripped)
            return
        self.comparison = None
        self.comparison_staged = False
        if _COMPARE_RE.search(stripped):
            staged = self._crossing(stripped)
            if staged is not None:
                self.comparison, self.comparison_staged = stripped[:200], staged
        assigned = _CROSS_ASSIGN_RE.match(stripped)
        if assigned and _PEER_RE.search(assigned.group(2)):
            self.crossed[assigned.group(1)] = bool(_STAGED_RE.search(assigned.group(2)))
        self._statement(stripped)

    def _crossing(self, statement: str) -> bool | None:
        """Whether ``statement`` involves data moved to a GPU (True when through the CPU);
        None when it does not."""
        if _PEER_RE.search(statement):
            return bool(_STAGED_RE.search(statement))
        words = set(_WORD_RE.findall(statement))
        crossed = [staged for name, staged in self.crossed.items() if name in words]
        return all(crossed) if crossed else None

    def _verdict(self, printed: str) -> None:
        """``True``/``False`` printed after comparing data that crossed GPUs."""
        if self.comparison is None:
            return
        value = printed.removeprefix("tensor(").split(",")[0].rstrip(")").strip()
        if value in ("True", "False"):
            staged = self.comparison_staged
            self.results.append(
                (
                    staged,
                    P2PIntegrity(
                        tool="pytorch",
                        ok=value == "True",
                        quote=f"{self.comparison} -> {value}",
                        detail=f"a comparison of data copied between GPUs printed {value}",
                    ),
                )
            )
        self.comparison = None

    def _statement(self, stripped: str) -> None:
        assign = _ASSIGN_RE.match(stripped)
        if assign and assign.group(2) in self.literals:
            # ``a = a.to("cuda:0")``: the values follow the variable (judged when printed).
            self.literals[assign.group(1)] = self.literals[assign.group(2)]
            if assign.group(1) == assign.group(2):
                return
        for match in _MOVE_RE.finditer(stripped):
            name = match.group(1)
            targets = _TARGET_RE.findall(match.group(0))
            if name in self.literals and targets:
                staged = "cpu" in match.group(0)
                self.pending = (name, staged, int(targets[-1]), stripped[:200])
                return

    def _judge(self, printed: str, device: str | None) -> None:
        assert self.pending is not None
        name, staged, target, statement = self.pending
        if device is not None and int(device) != target:
            return
        got, want = _values(printed), self.literals[name]
        if None in got or None in want or not want:
            return  # not plain numbers (bool, nested, elided with ...): no verdict
        way = "host-staged" if staged else "direct"
        self.results.append(
            (
                staged,
                P2PIntegrity(
                    tool="pytorch",
                    ok=_close(got, want),
                    dst=target,
                    quote=f"{statement} -> tensor([{printed}])",
                    detail=f"{way} copy to cuda:{target}: expected {_fmt(want)}, read {_fmt(got)}",
                ),
            )
        )


def _fmt(values: list[float | None]) -> str:
    return "[" + ", ".join("?" if v is None else f"{v:g}" for v in values) + "]"


def _session_line(session: _Session, raw: str, index: int) -> bool:
    session.line(raw)
    return True


def _pytorch(doc: Doc) -> list[P2PIntegrity]:
    """A session's results, read from its first line that names torch (20,000 lines on)."""
    start = first_line(doc, lambda line: "torch" in line)
    if start is None:
        return []
    session = _Session()
    walker = Walker(blank_lines="read", others="skip", commands="read")
    walker.walk(doc, start, session, (_session_line,), start + 20000)
    direct = [r for staged, r in session.results if not staged]
    staged = [r for is_staged, r in session.results if is_staged]
    for r in direct:
        if staged:
            r.staged_ok = all(s.ok for s in staged)
    bad = [r for r in direct if r.ok is False]
    return bad or direct[:1]


# ------------------------------------------------------------------- IOMMU-group tables


def _table(doc: Doc) -> P2PIntegrity | None:
    lines = doc.lines[:20000]
    # The table's header row, not a sentence that mentions IOMMU groups.
    head = next(
        (
            i
            for i, line in enumerate(lines)
            if "IOMMU group" in line and "|" in line.translate(_BARS)
        ),
        None,
    )
    if head is None:
        return None
    names = [c.strip().lower() for c in lines[head].translate(_BARS).split("|")]
    result = P2PIntegrity(tool="iommu-table", ok=None)
    for line in lines[head + 1 : head + 200]:
        cells = [c.strip() for c in line.translate(_BARS).split("|")]
        if len(cells) != len(names):
            continue
        row = dict(zip(names, cells, strict=False))
        bdf = next((c for c in cells if _BDF_RE.match(c)), None)
        if bdf is None:
            continue
        result.gpus.append(bdf)
        result.iommu_groups.append(row.get("iommu group", ""))
        result.root_complexes.append(next((v for k, v in row.items() if "root" in k), ""))
    corrupt = next((line.strip() for line in lines if _HUGE_ALLOC_RE.search(line)), None)
    if len(result.gpus) < 2 or corrupt is None:
        return None
    result.quote = corrupt[:300]
    result.detail = (
        f"GPUs {', '.join(result.gpus)} in IOMMU groups {', '.join(result.iommu_groups)} under "
        f"root complexes {', '.join(result.root_complexes)}; the job read a corrupted size"
    )
    return result


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The importer's face: every integrity result of ``doc`` in one fragment."""
    integrity = extract(doc)
    if not integrity:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.p2p_integrity.extend(integrity)
    frag.read.append(summary(integrity))
    return [frag]


def extract(doc: Doc) -> list[P2PIntegrity]:
    """Every integrity result in the text."""
    found: list[P2PIntegrity] = []
    simple = _simple_p2p(doc)
    if simple is not None:
        found.append(simple)
    found.extend(_pytorch(doc))
    table = _table(doc)
    if table is not None:
        found.append(table)
    return found


def summary(items: list[P2PIntegrity]) -> str:
    """One line for ``origin.sources[].read``."""
    parts = []
    for item in items:
        verdict = {True: "correct", False: "WRONG DATA", None: "suspected corruption"}[item.ok]
        parts.append(f"{item.tool}: {verdict}")
    return "P2P data integrity: " + "; ".join(parts)
