"""The failure catalogue's scan (:mod:`.error_lines`) behind the importer's face of a whole-text
reader: every line of every paste is offered to the catalogue, whatever else the paste holds."""

from __future__ import annotations

from pcidoc.collect.importers import error_lines
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import Doc

FORMAT = error_lines.FORMAT


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The catalogue's hits in ``doc`` (none when no line matched); a text that only mentions
    known failures in sentences gets a note instead."""
    fragment, notes = error_lines.extract(doc, ctx.file)
    ctx.warnings.extend(notes)
    return [fragment] if fragment is not None else []
