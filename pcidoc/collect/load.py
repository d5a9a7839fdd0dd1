"""``--from FILE``: a pcidoc capture or report, or anything ``pcidoc import`` reads.

People bring what they have: a capture written by ``pcidoc capture``, or the pasted output of a
tool, a training log, a few ``dmesg`` lines. ``check --from`` and the TUI's ``--from`` take
either: JSON that is a capture (or a report, whose machine is used) loads as one; any other text,
and JSON of another kind (an NCCL RAS report, a flight-recorder dump, nccl-tests' JSON), goes
through the importers on the way, as ``pcidoc import FILE | pcidoc check --from -`` would.
"""

from __future__ import annotations

from pcidoc._record import record
from pcidoc.collect.capture import STDIN_LABEL, load_capture_bytes
from pcidoc.errors import PcidocError
from pcidoc.fileio import MAX_PASTE_BYTES, decode_text, read_input
from pcidoc.model.capture import Capture


@record
class Loaded:
    """The machine of ``--from`` and how it was read.

    Attributes:
        capture: The machine.
        imported: True when the file was pasted output read through the importers (the
            capture's ``origin.sources`` say what was read and warned).
    """

    capture: Capture
    imported: bool = False


def _import(label: str, text: str) -> Capture:
    from pcidoc.collect.importers import import_texts

    return import_texts([(label, text)]).capture


def load_machine(path: str) -> Loaded:
    """Load ``path`` (``-``: standard input) as a capture, or import it as pasted output.

    Raises:
        PcidocError: unreadable; a damaged capture; or a text in which nothing supported was
            recognised (one line, as ``pcidoc import`` says it).
    """
    label = STDIN_LABEL if path == "-" else path
    data = read_input(path, limit=MAX_PASTE_BYTES, what="a capture or a pasted output")
    text = decode_text(data, label)
    if text.lstrip()[:1] != "{":  # a capture is a JSON object; `[  5.37] mlx5_core...` is dmesg
        return Loaded(_import(label, text), imported=True)
    try:
        return Loaded(load_capture_bytes(data, label))
    except PcidocError as error:
        if '"schema"' in text[:4096] and "pcidoc." in text[:4096]:
            raise  # a pcidoc file that is damaged: its own message says what is wrong
        try:
            return Loaded(_import(label, text), imported=True)
        except PcidocError:
            raise error from None
