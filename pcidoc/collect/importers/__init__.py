"""``pcidoc import``: build a capture of one machine from outputs people paste.

Supported outputs are listed in :data:`SUPPORTED_FORMATS` (and documented in docs/import.md).
Each text is cleaned (prompts, markdown, mpirun tags, vim tab markers), split into sections by
the distinctive lines of each format, each section is parsed by its format's module, and the
fragments of all files are merged into one :class:`~pcidoc.model.capture.Capture`
(``origin.kind == "import"``). Damaged pastes import what is sound and say what was dropped in
``origin.sources[].warnings``; only input in which nothing at all is recognised is an error.

Public API: :func:`import_texts`, :func:`import_paths`, :class:`ImportResult`,
:data:`SUPPORTED_FORMATS`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from pcidoc._record import field, record
from pcidoc.collect.import_formats import JSON, SHORT_NAMES, SUPPORTED_FORMATS, TEXT, readers
from pcidoc.collect.importers import scan as _scan
from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.merge import FileResult, merge
from pcidoc.collect.importers.text import json_integer, lazy, prepare
from pcidoc.errors import PcidocError
from pcidoc.fileio import MAX_PASTE_BYTES, decode_text, read_input
from pcidoc.model.capture import Capture
from pcidoc.sanitize import clean_data, clean_line, clean_text

_MAX_BYTES = MAX_PASTE_BYTES

MAX_PASTE_LINES = 500_000
"""Lines of a text paste that are read (``nvidia-smi -q`` of 1,000 GPUs is ~200,000 lines;
a 1,000-GPU ``topo -m`` is 1,000). Profiler traces (JSON) are not counted in lines."""


@record
class ImportResult:
    """The outcome of an import.

    Attributes:
        capture: The machine (``origin.kind == "import"``; per-file details in
            ``capture.origin.sources``).
        warnings: Every warning, prefixed with its file name (same as
            ``capture.origin.warnings``).
        unrecognised: Files in which nothing supported was found (each also a warning).
    """

    capture: Capture
    warnings: list[str] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)


def _display_name(name: str) -> str:
    if name in ("-", "<stdin>"):
        return "<stdin>"
    return Path(name).name or name


def _damage(text: str) -> list[str]:
    """Warnings about bytes that are no text, which cleaning removes: a block of NUL bytes is
    what a crash leaves in ``kern.log`` (the file system extended the file, the data never came);
    the lines around it are read."""
    nul = text.count("\x00")
    if not nul:
        return []
    return [
        f"{nul:,} NUL byte(s) (a block of zeros, as a crash leaves in a log file) were passed "
        "over; the text around them was read"
    ]


def _parse_text(path: str, text: str, notes: list[str] | None = None) -> FileResult:
    name = _display_name(path)
    result = FileResult(path=path, name=name, warnings=list(notes or []))
    preamble, document = _json_document(text)
    if document is not None:
        fragment, rest = _parse_json(document, name, result)
        if fragment is not None:
            result.fragments.append(fragment)
            if not (preamble + rest).strip():
                return result
            text = preamble + rest  # the lines around the document are read too
    if text.count("\n") > MAX_PASTE_LINES:
        # Every line is offered to every format; a text this long is not a paste, and reading
        # all of it would take minutes. What a real output needs comes first.
        text = "\n".join(text.split("\n", MAX_PASTE_LINES)[:MAX_PASTE_LINES])
        result.warnings.append(
            f"more than {MAX_PASTE_LINES:,} lines: read the first {MAX_PASTE_LINES:,}"
        )
    doc = prepare(text, name)
    scanned = _scan.scan(doc, name)
    result.fragments.extend(scanned.fragments)
    result.warnings.extend(scanned.warnings)
    for fmt, reader in readers(TEXT):
        ctx = Context(file=name)
        _, read = reader.functions()
        try:
            found = read(doc, ctx)  # type: ignore[operator]
        except Exception as exc:  # a reader's bug must not lose the rest of the import
            if _scan.RAISE_PARSER_ERRORS:
                raise
            found = []
            ctx.warnings.append(
                f"{SHORT_NAMES[fmt]}: could not be read ({exc.__class__.__name__}); the other "
                "formats were read"
            )
        result.warnings.extend(ctx.warnings)
        result.fragments.extend(found)
    return result


_DOCUMENT_START_RE = lazy(r"^[^\S\n]*[\[{]", re.MULTILINE)
"""A line that starts with ``{`` or ``[`` (after blanks): one check, not a loop over lines."""


def _json_document(text: str) -> tuple[str, str | None]:
    """``(the lines before, the rest)`` of a text whose rest, from its first ``{`` or ``[``
    line, may start with a JSON document: at the start, or after lines of prose, comments
    (``# source: ...``) or a log (leading lines never hide a document). No such line: ``(text,
    None)``."""
    found = _DOCUMENT_START_RE.search(text)
    if found is None:
        return text, None
    return text[: found.start()], text[found.end() - 1 :]


def _unknown(_name: str) -> None:
    return None


def _finite(text: str) -> float | None:
    value = float(text)
    return None if math.isinf(value) else value


def _parse_json(text: str, name: str, result: FileResult) -> tuple[Fragment | None, str]:
    """The fragment of the JSON document at the start of ``text`` (None when it is none pcidoc
    reads, or no document), and the text after the document."""
    import json

    # NaN, Infinity and 1e999 are not numbers a measurement can hold: read as unknown.
    decoder = json.JSONDecoder(parse_constant=_unknown, parse_float=_finite, parse_int=json_integer)
    try:
        value, end = decoder.raw_decode(text)
        data = clean_data(value)
    except (ValueError, RecursionError):
        if '"traceEvents"' in text[:4096]:
            result.warnings.append("profiler trace: the JSON is incomplete or damaged; not read")
        return None, ""
    return _json_fragment(data, name, result), text[end:]


def _json_fragment(data: object, name: str, result: FileResult) -> Fragment | None:
    """The first JSON reader of the table that takes ``data``."""
    ctx = Context(file=name)
    for fmt, reader in readers(JSON):
        detect, parse = reader.functions()
        try:
            if not detect(data):  # type: ignore[operator]
                continue
            fragment = parse(data, ctx)  # type: ignore[operator]
        except Exception as exc:  # a parser bug must not turn into a traceback
            if _scan.RAISE_PARSER_ERRORS:
                raise
            result.warnings.append(
                f"{SHORT_NAMES[fmt]}: could not be read ({exc.__class__.__name__})"
            )
            return None
        if fragment is not None:
            result.warnings.extend(ctx.warnings)
            return fragment  # type: ignore[no-any-return]
    return None


def import_texts(items: list[tuple[str, str]]) -> ImportResult:
    """Build one capture from pasted texts that all describe the same machine.

    Args:
        items: ``(name, text)`` pairs; ``name`` is used in messages and in measurement sources
            (``import:<name>``).

    Returns:
        The merged capture with per-file details in ``capture.origin.sources``.

    Raises:
        PcidocError: nothing supported was recognised in any of the texts (the message names
            the files and lists the supported formats).

    This is where pasted text enters pcidoc: names and texts are cleaned of terminal control
    sequences here, once (:mod:`pcidoc.sanitize`), so no parser, capture or presenter sees one.
    """
    files = [_parse_text(clean_line(name), clean_text(text), _damage(text)) for name, text in items]
    unrecognised = [f.name for f in files if not f.fragments]
    if files and len(unrecognised) == len(files):
        names = ", ".join("<stdin>" if f.path == "-" else f.path for f in files)
        if all(not text.strip() for _, text in items):
            how = (
                "pipe the tool's output in (e.g. `nvidia-smi topo -m | pcidoc import -`)"
                if all(f.path == "-" for f in files)
                else "save the tool's output into it first (e.g. `nvidia-smi topo -m > topo.txt`)"
            )
            raise PcidocError(f"{names}: empty, nothing to import; {how}")
        mentions = [w for f in files for w in f.warnings if "mention a known failure" in w]
        said = f" ({mentions[0]}: a sentence is no evidence)" if mentions else ""
        raise PcidocError(
            f"{names}: no supported output recognised{said}; pcidoc import reads "
            + ", ".join(SUPPORTED_FORMATS)
        )
    if not files:
        raise PcidocError("pcidoc import: no input given")
    for file in files:
        if not file.fragments:
            file.warnings.append(
                "nothing recognised in this file (supported: " + ", ".join(SUPPORTED_FORMATS) + ")"
            )
    try:
        capture = merge(files)
    except PcidocError:
        raise
    except Exception as exc:
        if _scan.RAISE_PARSER_ERRORS:
            raise
        raise PcidocError(
            f"{', '.join(f.path for f in files)}: could not assemble the capture "
            f"({exc.__class__.__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})"
        ) from None
    return ImportResult(
        capture=capture, warnings=list(capture.origin.warnings), unrecognised=unrecognised
    )


def _read(path: str) -> str:
    """Read one paste: bounded (see :data:`pcidoc.fileio.MAX_PASTE_BYTES`), gunzipped,
    UTF-8 / UTF-8 with BOM / UTF-16 (PowerShell's ``>``) decoded."""
    data = read_input(path, limit=_MAX_BYTES, what="a paste")
    return decode_text(data, "<stdin>" if path == "-" else path)


def import_paths(paths: list[str]) -> ImportResult:
    """Read files (``-`` = standard input) and build one capture from them.

    Args:
        paths: Files holding pasted outputs of one machine (``.gz`` files are decompressed).

    Returns:
        See :func:`import_texts`.

    Raises:
        PcidocError: a file is missing or unreadable (``FILE: no such file``), or nothing
            supported was recognised in any file.
    """
    from pcidoc.sanitize import clean_line

    # The file is read by its own name; the capture records it as text (a name with a byte
    # that is not UTF-8 could not be written to the JSON file).
    items = [(clean_line(path), _read(path)) for path in paths]
    return import_texts(items)


__all__ = ["SUPPORTED_FORMATS", "ImportResult", "import_paths", "import_texts"]
