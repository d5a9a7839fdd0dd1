"""Save and load capture files (``pcidoc.capture/1``), and redact them for sharing.

Loading never raises anything but :class:`pcidoc.errors.PcidocError` with a one-line message
that names the file and the problem. A report file (``pcidoc.report/1``) is accepted too: its
``machine`` is the capture. Files ending in ``.gz`` are read and written gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcidoc import __version__
from pcidoc.errors import PcidocError
from pcidoc.model.formats import CAPTURE_MAJOR

if TYPE_CHECKING:
    from pcidoc.model.capture import Capture

_SCHEMA_RE = re.compile(r"^pcidoc\.(?P<kind>[a-z]+)/(?P<major>\d+)$")


def utc_now() -> str:
    """Current UTC time in ISO 8601 with a ``Z`` suffix, to the second.

    Honours ``SOURCE_DATE_EPOCH`` so that generated files can be reproducible.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc)
    else:
        moment = datetime.now(tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_text(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return handle.read()
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PcidocError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PcidocError(f"{path}: is a directory, not a capture file") from None
    except PermissionError:
        raise PcidocError(f"{path}: permission denied") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise PcidocError(f"{path}: not a text file ({exc.__class__.__name__})") from None
    except OSError as exc:
        raise PcidocError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _unwrap(data: Any, name: str) -> tuple[dict[str, Any], str]:
    """Check the schema tag; return the capture object (a report's ``machine``) and its name."""
    if not isinstance(data, dict):
        raise PcidocError(f"{name}: not a pcidoc capture (the JSON is not an object)")
    schema = data.get("schema")
    if not isinstance(schema, str):
        raise PcidocError(f'{name}: not a pcidoc capture (no "schema" field)')
    match = _SCHEMA_RE.match(schema)
    if not match:
        raise PcidocError(f"{name}: not a pcidoc capture (schema is {schema!r})")
    kind, major = match.group("kind"), int(match.group("major"))
    if kind == "report":
        if major > 1:
            raise PcidocError(
                f"{name}: written by a newer pcidoc ({schema}); this pcidoc {__version__} reads "
                "pcidoc.report/1. Upgrade pcidoc."
            )
        machine = data.get("machine")
        if not isinstance(machine, dict):
            raise PcidocError(f'{name}: report has no "machine" object')
        return _unwrap(machine, f"{name} (machine)")
    if kind != "capture":
        raise PcidocError(f"{name}: is a {schema} file, not a capture")
    if major > CAPTURE_MAJOR:
        raise PcidocError(
            f"{name}: written by a newer pcidoc ({schema}); this pcidoc {__version__} reads "
            f"pcidoc.capture/{CAPTURE_MAJOR}. Upgrade pcidoc."
        )
    if major < CAPTURE_MAJOR:
        raise PcidocError(f"{name}: {schema} is an unsupported old format")
    return data, name


def _validation_error(name: str, errors: list[Any]) -> PcidocError:
    """One line naming the first invalid field, its problem and the value found."""
    first = errors[0]
    loc = _format_loc(tuple(first.get("loc", ())))
    got = first.get("input")
    got_text = ""
    if first.get("type") != "missing" and not isinstance(got, (dict, list)):
        got_text = f" (got {got!r})"
    more = f" (+{len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return PcidocError(f"{name}: {loc}: {first.get('msg')}{got_text}{more}")


def capture_from_data(data: Any, name: str) -> Capture:
    """Validate already-parsed JSON as a capture (or a report holding one).

    Args:
        data: Parsed JSON.
        name: File name used in error messages.

    Raises:
        PcidocError: one-line description of the first problem.
    """
    body, name = _unwrap(data, name)
    from pydantic import ValidationError

    from pcidoc.model.capture import Capture

    try:
        return Capture.model_validate(body)
    except ValidationError as exc:
        raise _validation_error(name, exc.errors()) from None


def _parse_json(text: str, file: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PcidocError(
            f"{file}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise PcidocError(f"{file}: not JSON (nested too deeply)") from None


def load_capture(path: str | os.PathLike[str]) -> Capture:
    """Load and validate a capture file.

    Raises:
        PcidocError: the file is missing, unreadable, not JSON, not a capture, from a newer
            major version, or has missing/wrong-typed fields.
    """
    file = Path(path)
    return capture_from_data(_parse_json(_read_text(file), file), str(file))


_FAST_VALIDATOR: Any = None


def load_capture_data(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a capture file as validated plain data, without building the model classes.

    The file is checked exactly as :func:`load_capture` checks it (same rules, same one-line
    errors), using the models' validation schema compiled ahead of time
    (:mod:`pcidoc.model.schemas`). For read-only fast paths such as ``pcidoc topo --json``.
    """
    global _FAST_VALIDATOR
    file = Path(path)
    body, name = _unwrap(_parse_json(_read_text(file), file), str(file))
    from pydantic_core import SchemaValidator, ValidationError

    if _FAST_VALIDATOR is None:
        from pcidoc.model.schemas import CORE_SCHEMA_FILE

        _FAST_VALIDATOR = SchemaValidator(json.loads(CORE_SCHEMA_FILE.read_text("utf-8")))
    try:
        return dict(_FAST_VALIDATOR.validate_python(body))
    except ValidationError as exc:
        raise _validation_error(name, exc.errors()) from None


def dump_json(model: Any) -> str:
    """Serialize a pcidoc model (capture or report) as stable, indented JSON."""
    return model.model_dump_json(by_alias=True, indent=2) + "\n"


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temp file in the same folder + rename).

    Raises:
        PcidocError: the folder does not exist or is not writable.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise PcidocError(f"{target}: folder {folder} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise PcidocError(f"{target}: cannot write ({exc.strerror or exc})") from None
    try:
        if target.suffix == ".gz":
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(text.encode("utf-8"))
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        raise PcidocError(f"{target}: cannot write ({exc.strerror or exc})") from None
    return target


def save_capture(capture: Capture, path: str | os.PathLike[str]) -> Path:
    """Write a capture file atomically, stamping version and time when missing."""
    if capture.origin.pcidoc_version is None:
        capture.origin.pcidoc_version = __version__
    if capture.origin.created_at is None:
        capture.origin.created_at = utc_now()
    return write_atomic(path, dump_json(capture))


# ------------------------------------------------------------------------------ redaction

_UUID_RE = re.compile(
    r"\b(?:GPU-|MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_MAC_RE = re.compile(r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b")
_GUID_RE = re.compile(r"\b[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}\b")
_SERIAL_KEYS = {"serial", "serial_number", "board_serial"}
_HOST_KEYS = {"hostname", "host", "node"}


class _Redactor:
    """Replaces identifying strings with stable placeholders (same input -> same output)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        self.hostnames: list[str] = []

    def placeholder(self, kind: str, original: str) -> str:
        key = f"{kind}:{original}"
        if key not in self.seen:
            n = self.counters.get(kind, 0) + 1
            self.counters[kind] = n
            if kind == "uuid":
                prefix = (
                    "GPU-"
                    if original.startswith("GPU-")
                    else ("MIG-" if original.startswith("MIG-") else "")
                )
                self.seen[key] = f"{prefix}00000000-0000-0000-0000-{n:012d}"
            elif kind == "mac":
                self.seen[key] = f"02:00:00:00:{n // 256:02x}:{n % 256:02x}"
            elif kind == "guid":
                self.seen[key] = f"0000:0000:0000:{n:04x}"
            else:
                self.seen[key] = f"redacted-{kind}-{n}"
        return self.seen[key]

    def text(self, value: str) -> str:
        for host in self.hostnames:
            if host and host in value:
                value = value.replace(host, self.placeholder("host", host))
        value = _UUID_RE.sub(lambda m: self.placeholder("uuid", m.group(0)), value)
        value = _MAC_RE.sub(lambda m: self.placeholder("mac", m.group(0)), value)
        return _GUID_RE.sub(lambda m: self.placeholder("guid", m.group(0)), value)

    def walk(self, node: Any, key: str | None = None) -> Any:
        if isinstance(node, dict):
            return {k: self.walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [self.walk(v, key) for v in node]
        if isinstance(node, str):
            if key in _SERIAL_KEYS and node:
                return self.placeholder("serial", node)
            if key in _HOST_KEYS and node:
                return self.placeholder("host", node)
            return self.text(node)
        return node


def redact_capture(capture: Capture) -> Capture:
    """Return a copy with hostnames, serials, UUIDs and MAC/GUID-like ids replaced.

    Placeholders are stable within the capture: the same UUID always maps to the same
    placeholder, so matrices and cross-references stay consistent.
    """
    data = capture.model_dump(by_alias=True, mode="json")
    redactor = _Redactor()
    hostname = data.get("host", {}).get("hostname")
    if hostname:
        redactor.hostnames.append(hostname)
        short = hostname.split(".")[0]
        if short != hostname:
            redactor.hostnames.append(short)
    redacted = redactor.walk(data)
    redacted["origin"]["redacted"] = True
    from pcidoc.model.capture import Capture

    return Capture.model_validate(redacted)
