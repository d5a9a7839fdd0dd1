"""What a check returns: :class:`Finding` (re-exported by :mod:`pcidoc.doctor.registry`)."""

from __future__ import annotations

from collections.abc import Sequence

from pcidoc._record import record
from pcidoc.model.report import Confidence, Evidence, Severity


@record
class Finding:
    """One thing a check found. A check may return several; they merge into one result.

    Attributes:
        severity: ``pass``/``info``/``warn``/``fail``/``skip`` (``error`` is set by the engine).
        summary: One line with the key numbers, e.g. ``"GPU2 at Gen1 x16 under load"``.
        subjects: ``GPU<n>``, ``GPU<a>-GPU<b>``, NIC names.
        evidence: Facts and numbers used, with units.
        remediation: What to do, in order; commands in backticks.
        confidence: How sure the finding is (``low`` when it rests on indirect evidence).
        needs: For ``skip``: what would provide the missing input.
    """

    severity: Severity
    summary: str
    subjects: Sequence[str] = ()
    evidence: Sequence[Evidence] = ()
    remediation: Sequence[str] = ()
    confidence: Confidence = "high"
    needs: str | None = None
