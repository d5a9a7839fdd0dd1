"""Presenters: turn one :class:`~pcidoc.model.report.Report` (or a capture's topology) into text.

* :mod:`pcidoc.present.json` -- ``report_json`` / ``topology_json`` (light: no rich)
* :mod:`pcidoc.present.text` -- rich terminal output: ``render_report``, ``render_topology``
* :mod:`pcidoc.present.markdown` -- ``render_markdown`` for GitHub issues
* :mod:`pcidoc.present.html` -- ``render_html``, a self-contained page

Presenters only format; diagnoses come from :mod:`pcidoc.doctor`. Each module is imported on
demand so that ``pcidoc check --json`` never loads rich.
"""

from __future__ import annotations

import os

from pcidoc.errors import PcidocError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.report import Report

REPORT_SUFFIXES: tuple[str, ...] = (".json", ".md", ".html", ".htm")
"""File extensions :func:`render_report_file` knows."""


def render_report_file(report: Report, path: str | os.PathLike[str]) -> str:
    """Render a report in the format named by the file's extension.

    Args:
        report: The report.
        path: Target file; ``.json``, ``.md``, ``.html`` or ``.htm`` (case-insensitive).

    Returns:
        The file's text (the caller writes it).

    Raises:
        PcidocError: the extension is none of the above.
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix == ".json":
        from pcidoc.present.json import report_json

        return report_json(report)
    if suffix == ".md":
        from pcidoc.present.markdown import render_markdown

        return render_markdown(report)
    if suffix in (".html", ".htm"):
        from pcidoc.present.html import render_html

        return render_html(report)
    raise PcidocError(
        f"{os.fspath(path)}: unknown report format {suffix or '(no extension)'!r}; "
        "use .json, .md or .html"
    )


__all__ = ["REPORT_SUFFIXES", "render_report_file"]
