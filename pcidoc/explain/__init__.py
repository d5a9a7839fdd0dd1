"""``pcidoc explain``: from a failed job's files to the rank, the GPU, the link and the cause.

Layers, as in the rest of pcidoc: :mod:`~pcidoc.explain.gather` reads the files (the collector),
:mod:`~pcidoc.explain.reason` and :mod:`~pcidoc.explain.rules` reason over the facts (pure
functions, like the doctor's checks), :mod:`~pcidoc.explain.render` renders the result (text
and the ``pcidoc.explain/1`` JSON). Nothing here imports Textual or torch.

Public API: :func:`explain_paths`, :func:`explain_facts`, :class:`Explanation`.
"""

from __future__ import annotations

from pcidoc.errors import PcidocError
from pcidoc.explain.facts import CAUSES, JobFacts
from pcidoc.explain.gather import gather
from pcidoc.explain.reason import explain_facts
from pcidoc.explain.verdict import SCHEMA, Explanation


def explain_paths(paths: list[str]) -> Explanation:
    """Read a job's files (folders walked) and explain what happened.

    Raises:
        PcidocError: nothing readable was found (exit 3).
    """
    facts = gather(paths)
    if not facts.files_read:
        reasons = "; ".join(f"{u.path}: {u.reason}" for u in facts.unread[:3])
        raise PcidocError(
            "no readable job file in " + ", ".join(paths) + (f" ({reasons})" if reasons else "")
        )
    return explain_facts(facts)


__all__ = ["CAUSES", "SCHEMA", "Explanation", "JobFacts", "explain_facts", "explain_paths"]
