"""Error lines anywhere in a paste, matched against the failure catalogue
(:mod:`pcidoc.catalogue`): whatever else the paste holds, and whether or not a format is
recognised, every line shaped like evidence is read (an error line alone is a diagnosis)."""

from __future__ import annotations

from collections import Counter

from pcidoc import catalogue
from pcidoc.collect.importers.fragment import Fragment
from pcidoc.collect.importers.text import Doc

FORMAT = "error-lines"


def summary(scan: catalogue.Scan) -> str:
    """One line for ``origin.sources[].read``."""
    faults = scan.faults
    counts = Counter(hit.id for hit in faults)
    parts = [f"{sum(h.count for h in faults)} error line(s) matched the failure catalogue"]
    if counts:
        parts[0] += " (" + ", ".join(f"{i} x{n}" for i, n in counts.most_common(4)) + ")"
    benign = sum(h.count for h in scan.hits) - sum(h.count for h in faults)
    if benign:
        parts.append(f"{benign} known-benign line(s)")
    if scan.mentions:
        parts.append(
            f"{len(scan.mentions)} sentence(s) mention a known failure without being a log "
            "line (not counted)"
        )
    return ", ".join(parts)


def extract(doc: Doc, name: str) -> tuple[Fragment | None, list[str]]:
    """The fragment of the catalogue's hits (None when no line matched), and notes for a text
    that only mentions failures in sentences."""
    scan = catalogue.scan(doc.lines, name, doc.numbers)
    if not scan.hits:
        note = []
        if scan.mentions:
            note.append(summary(scan))
        return None, note
    frag = Fragment(FORMAT)
    frag.evidence.signatures.extend(scan.hits)
    frag.evidence.mentions.extend(scan.mentions)
    frag.evidence.scanned_lines = sum(1 for line in doc.lines if line.strip())
    frag.read.append(summary(scan))
    if scan.dropped:
        frag.warn(f"more than {catalogue.MAX_HITS} distinct error lines: {scan.dropped} not kept")
    return frag, []
