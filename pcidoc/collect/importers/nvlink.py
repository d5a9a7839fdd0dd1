"""``nvidia-smi nvlink -s`` / ``-R`` / ``-e`` (and ``-info``, ``-c``, ``nvidia-smi -L``).

Per ``GPU N: NAME (UUID: GPU-...)`` heading: ``Link k: 26.562 GB/s`` (up, with its rate) or
``<inactive>`` (down) from ``-s``; ``Link k: Remote Device 00000000:D5:00.0: Link 6`` from
``-R``; ``Link k: Replay Errors: 0`` style counters from ``-e``. Other per-link lines
(``-info`` firmware versions, ``-c`` capabilities) are read past. Elision lines (``...``,
``......``) end what is known: a GPU cut short before one is marked partial.

A block of headings without any link lines is ``nvidia-smi -L`` (index, name, UUID).
"""

from __future__ import annotations

import re

from pcidoc._record import field, record
from pcidoc.collect.importers.fragment import Context, Fragment, GpuPart
from pcidoc.collect.importers.text import Doc, label_span, lazy, normalize_bus_id, to_float, to_int
from pcidoc.collect.importers.walk import Walker

FORMAT = "nvidia-smi-nvlink"
DESCRIPTION = "nvidia-smi nvlink -s / -R / -e (NVLink state, rate, remote ends, errors)"
LIST_FORMAT = "nvidia-smi-list"
LIST_DESCRIPTION = "nvidia-smi -L (GPU index, name, UUID)"

_GPU_RE = lazy(r"^\s*GPU\s+(\d{1,3}):(.*)$")
_UUID_RE = lazy(r"\(UUID:\s*((?:GPU|MIG)-[0-9A-Za-z-]+)\s*\)$")
_LINK_RE = lazy(r"^\s*Link\s+(\d{1,3})\s*:(.*)$")
_SPEED_RE = lazy(r"^([\d.]+)\s*GB/s$", re.IGNORECASE)
_REMOTE_RE = lazy(
    r"^Remote\s+Device\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:?\s*"
    r"(?:Link\s+(\d+))?",
    re.IGNORECASE,
)
_ERROR_RE = lazy(r"^([A-Za-z][A-Za-z ]*)Errors?\s*:\s*(\d+)$", re.IGNORECASE)
_ELISION_RE = lazy(r"^\s*(?:\.{2,}|…+)\s*$")
_MIG_RE = lazy(r"^\s+MIG\s+\S+\s+Device\s+\d+", re.IGNORECASE)


def _heading(line: str) -> tuple[int, str, str | None] | None:
    """``(index, name, uuid)`` of a ``GPU N: NAME (UUID: GPU-...)`` line."""
    match = _GPU_RE.match(line)
    if not match:
        return None
    rest = match.group(2).strip()
    uuid = _UUID_RE.search(rest)
    name = rest[: uuid.start()].strip() if uuid else rest
    return int(match.group(1)), name, uuid.group(1) if uuid else None


def detect(doc: Doc, index: int, ctx: Context) -> bool:
    """True at a ``GPU N: NAME`` heading followed by link lines, more headings or an indented
    block (``-info``)."""
    heading = _heading(doc.lines[index])
    return bool(heading and (heading[2] or _followed_by_link(doc, index)))


def _followed_by_link(doc: Doc, index: int) -> bool:
    nxt = index + 1
    return nxt < len(doc.lines) and bool(_LINK_RE.match(doc.lines[nxt]))


def _error_key(name: str) -> str:
    words = " ".join(name.lower().split())
    return {"crc": "crc_flit", "crc flit": "crc_flit"}.get(words, words.replace(" ", "_"))


@record
class _Blocks:
    """The ``GPU N:`` blocks being read."""

    doc: Doc
    frag: Fragment
    current: GpuPart | None = None
    order: list[int] = field(default_factory=list)
    link_lines: int = 0
    kinds: set[str] = field(default_factory=set)
    elided_after: list[int | None] = field(default_factory=list)
    mig_seen: bool = False
    other_lines: int = 0


def _on_heading(blocks: _Blocks, line: str, index: int) -> bool:
    heading = _heading(line)
    if heading is None:
        return False
    gpu_index, name, uuid = heading
    current = blocks.current = blocks.frag.gpu(gpu_index)
    if gpu_index not in blocks.order:
        blocks.order.append(gpu_index)
    if name:
        current.fields.setdefault("name", name)
    if uuid and uuid.startswith("GPU-"):
        current.fields.setdefault("uuid", uuid)
    return True


def _on_elision(blocks: _Blocks, line: str, index: int) -> bool:
    if not _ELISION_RE.match(line):
        return False
    blocks.elided_after.append(blocks.current.index if blocks.current else None)
    return True


def _on_link(blocks: _Blocks, line: str, index: int) -> bool:
    match = _LINK_RE.match(line)
    if not match or blocks.current is None:
        return False
    blocks.link_lines += 1
    _link(blocks.current, int(match.group(1)), match.group(2).strip(), blocks.kinds)
    return True


def _on_indented(blocks: _Blocks, line: str, index: int) -> bool:
    """Other per-GPU lines (``-info``, ``-c``; MIG devices of ``-L``) are read past."""
    if blocks.current is None or not line[:1].isspace():
        return False
    if _MIG_RE.match(line):
        blocks.current.mig["enabled"] = True
        blocks.mig_seen = True
    else:
        blocks.other_lines += 1
    return True


_HANDLERS = (_on_heading, _on_elision, _on_link, _on_indented)


def _resumes(blocks: _Blocks, index: int, blanks: int) -> bool:
    following = blocks.doc.lines[index]
    return not blocks.doc.is_command(index) and bool(
        _GPU_RE.match(following) or _LINK_RE.match(following)
    )


def parse(doc: Doc, start: int, ctx: Context) -> tuple[Fragment, int]:
    """Parse consecutive ``GPU N:`` blocks of one nvlink / -L output."""
    blocks = _Blocks(doc, Fragment(FORMAT, from_nvidia_smi=True))
    index = Walker(blank_lines=None, resume=_resumes).walk(doc, start, blocks, _HANDLERS)
    frag, order = blocks.frag, blocks.order
    if blocks.link_lines == 0 and (blocks.other_lines or (ctx.command and "nvlink" in ctx.command)):
        frag.read.append(f"nvlink (no per-link lines): {label_span([f'GPU{g}' for g in order])}")
    elif blocks.link_lines == 0:
        _gpu_list(blocks)
    else:
        _links_read(blocks)
    return frag, index


def _gpu_list(blocks: _Blocks) -> None:
    """Headings without link lines: ``nvidia-smi -L``."""
    frag, order = blocks.frag, blocks.order
    frag.fmt = LIST_FORMAT
    frag.from_nvidia_smi = True
    if order and sorted(order) == list(range(len(order))) and not blocks.elided_after:
        frag.gpu_count = len(order)
    names = sorted({p.fields.get("name") for p in frag.gpus if p.fields.get("name")})
    frag.read.append(
        f"GPU list: {label_span([f'GPU{g}' for g in order])}"
        + (f" ({', '.join(names)})" if names else "")
        + ("; MIG devices listed" if blocks.mig_seen else "")
    )


def _links_read(blocks: _Blocks) -> None:
    """Warnings about elided GPUs, and what was read."""
    frag, order = blocks.frag, blocks.order
    counts = {part.index: _shown(part) for part in frag.gpus}
    most = max(counts.values(), default=0)
    for gpu in blocks.elided_after:
        if gpu is None:
            frag.warn("nvlink: the paste starts with an elision ('...'); earlier GPUs unknown")
            continue
        shown = counts.get(gpu, 0)
        if shown < most:
            part = frag.gpu(gpu)
            part.unknown("nvlinks", f"only {shown} of its links were in the paste (elided)")
            frag.warn(
                f"nvlink: the paste elides the rest after GPU{gpu} ('...'); GPU{gpu} shows "
                f"{shown} of {most} links (kept as partial), GPUs not shown are unknown"
            )
        else:
            frag.warn(
                f"nvlink: GPUs after GPU{gpu} are elided in the paste ('...'); only "
                f"{label_span([f'GPU{g}' for g in order])} are known"
            )
    what = " + ".join(sorted(blocks.kinds)) or "links"
    per_gpu = ", ".join(f"GPU{g}: {counts.get(g, 0)}" for g in order[:4])
    more = ", ..." if len(order) > 4 else ""
    up = sum(1 for p in frag.gpus for link in p.nvlinks.values() if link.get("state") == "up")
    down = sum(1 for p in frag.gpus for link in p.nvlinks.values() if link.get("state") == "down")
    state = f"; {up} up, {down} inactive" if up or down else ""
    frag.read.append(f"nvlink {what}: {len(order)} GPUs ({per_gpu}{more} links){state}")


def _link(part: GpuPart, link: int, text: str, kinds: set[str]) -> None:
    speed = _SPEED_RE.match(text)
    if speed:
        kinds.add("status")
        entry = part.nvlinks.setdefault(link, {})
        entry["state"] = "up"
        value = to_float(speed.group(1))
        if value is not None:
            entry["speed_gbps"] = value
        return
    if text.lower().strip("<>") in ("inactive", "disabled", "down"):
        kinds.add("status")
        part.nvlinks.setdefault(link, {})["state"] = "down"
        return
    remote = _REMOTE_RE.match(text)
    if remote:
        kinds.add("remote")
        part.remotes.append((link, normalize_bus_id(remote.group(1)), to_int(remote.group(2))))
        return
    error = _ERROR_RE.match(text)
    if error:
        kinds.add("errors")
        value = to_int(error.group(2))
        if value is not None:
            errors = part.nvlinks.setdefault(link, {}).setdefault("errors", {})
            errors[_error_key(error.group(1))] = value


def _shown(part: GpuPart) -> int:
    return len(set(part.nvlinks) | {link for link, _, _ in part.remotes})
