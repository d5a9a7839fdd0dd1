"""Save and load capture files (``pcidoc.capture/1``), and redact them for sharing.

Loading never raises anything but :class:`pcidoc.errors.PcidocError` with a one-line message
that names the file and the problem. A report file (``pcidoc.report/1``) is accepted too: its
``machine`` is the capture. Files ending in ``.gz`` are read and written gzip-compressed.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone

from pcidoc import __version__
from pcidoc._lazyre import lazy
from pcidoc.errors import PcidocError
from pcidoc.model.formats import CAPTURE_MAJOR
from pcidoc.sanitize import clean_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from pcidoc.model.capture import Capture

_SCHEMA_RE = lazy(r"^pcidoc\.(?P<kind>[a-z]+)/(?P<major>\d+)$")


def utc_now() -> str:
    """Current UTC time in ISO 8601 with a ``Z`` suffix, to the second.

    Honours ``SOURCE_DATE_EPOCH`` so that generated files can be reproducible.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdecimal():
        moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc)
    else:
        moment = datetime.now(tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


STDIN_LABEL = "<stdin>"
"""How messages name a capture read from standard input (``--from -``)."""


MAX_CONTAINERS = 250_000
"""The most JSON objects and arrays a capture may hold, counted (over, by the ``{``/``[`` bytes)
before it is parsed. A 1,000-GPU capture with its full matrices holds about 50,000; a file of
``[[],[],...]`` or ``"gpus":[{},{},...]`` that would cost gigabytes to parse and to validate
stops here."""

MAX_VALUES = 4_000_000
"""The most JSON values a capture may hold, counted (over, by the ``,`` bytes) before it is
parsed: about 60 bytes of memory each once parsed. The 72-GPU sample holds 37,000; full
topology and P2P matrices of 800 devices fit. 80 MB of topology labels (9 million) took 800 MB
and 11 s to parse before any check could refuse them."""

MAX_ITEMS = 65_536
"""The most items one JSON array or object of a capture may hold, checked on the parsed data
before validation (a failing validation builds an error per bad item)."""

MAX_STRING_CHARS = 1 << 20
"""The longest JSON string accepted (1 MiB): no name, quote or path in a capture is that long."""

# A run of that many bytes after a quote with none of JSON's structural characters in it: a
# giant string (a long array of numbers has commas; a string with some still parses, bounded
# by the file's size limit).
_LONG_STRING = rb'"[^"\[\]{},:]{%d}' % MAX_STRING_CHARS  # compiled for large files only


def _check_size_shape(data: bytes, name: str) -> None:
    """Refuse, before parsing, what would cost far more memory than its size: too many
    containers, a giant string. C-speed passes over the bytes, each only where the file is large
    enough to exceed its limit (every value and container takes a byte at least)."""
    values = data.count(b",") if len(data) > MAX_VALUES else 0
    if values > MAX_VALUES:
        raise PcidocError(
            f"{clean_line(name)}: holds about {values:,} JSON values, more than the "
            f"{MAX_VALUES:,} of any real capture; not loaded"
        )
    containers = data.count(b"{") + data.count(b"[") if len(data) > MAX_CONTAINERS else 0
    if containers > MAX_CONTAINERS:
        raise PcidocError(
            f"{clean_line(name)}: holds {containers:,} JSON objects and arrays, more than the "
            f"{MAX_CONTAINERS:,} of any real capture; not loaded"
        )
    if len(data) > MAX_STRING_CHARS and re.search(_LONG_STRING, data) is not None:
        raise PcidocError(
            f"{clean_line(name)}: holds a string longer than {MAX_STRING_CHARS // 2**20} MiB; "
            "not a capture pcidoc wrote"
        )


def _label(path: str) -> str:
    return STDIN_LABEL if path == "-" else path


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


def capture_from_data(data: Any, name: str, *, clean: bool = True) -> Capture:
    """Validate already-parsed JSON as a capture (or a report holding one).

    Args:
        data: Parsed JSON.
        name: File name used in error messages.

    Every string (keys included) is first cleaned of terminal control sequences
    (:func:`pcidoc.sanitize.clean_data`): this is where outside data enters pcidoc. ``clean``
    is False only when the JSON text was shown to hold nothing to clean
    (:func:`pcidoc.sanitize.json_text_is_clean`).

    Raises:
        PcidocError: one-line description of the first problem.
    """
    from pcidoc.sanitize import clean_data

    body, name = _unwrap(clean_data(data) if clean else data, clean_line(name))
    from pcidoc.model.capture import Capture
    from pcidoc.model.compiled import core

    try:
        return Capture.model_validate(body)
    except core().ValidationError as exc:
        raise _validation_error(name, exc.errors()) from None


class _NonFinite(ValueError):
    pass


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a JSON object whose key repeats is refused, not last-one-wins."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(repr(clean_line(key)[:80]))
            seen.add(key)
    return out


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NonFinite(f"{text} (too large for a number)")
    return value


_NON_FINITE_RE = lazy(r"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


def _parse_json(text: str, file: str) -> Any:
    """Parse strict JSON: NaN and Infinity are refused (pcidoc writes unknown values as null)."""
    import json  # only here: a capture that loads in one step never needs the module

    try:
        data = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        raise PcidocError(
            f"{file}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except _DuplicateKey as exc:
        raise PcidocError(
            f"{file}: the key {exc} appears twice in one object; pcidoc does not guess which "
            "one counts (fix or regenerate the file)"
        ) from None
    except _NonFinite as exc:
        match = _NON_FINITE_RE.search(text) or re.search(re.escape(str(exc).split()[0]), text)
        where = f" (line {text.count(chr(10), 0, match.start()) + 1})" if match else ""
        raise PcidocError(
            f"{file}: holds {exc}{where}, which is not a JSON number; pcidoc writes unknown "
            "values as null"
        ) from None
    except RecursionError:
        raise PcidocError(f"{file}: not JSON (nested too deeply)") from None
    except ValueError as exc:  # an integer of over 4,300 digits
        raise PcidocError(f"{file}: not a capture ({str(exc)[:80]})") from None
    return data


def _matrix_problem(what: str, labels: int, rows: list[Any]) -> str | None:
    """Why a square matrix over ``labels`` names does not fit them, or None."""
    if not rows:
        return None
    widths = {len(row) for row in rows if isinstance(row, list)}
    if len(rows) != labels or widths != {labels}:
        shown = "/".join(str(w) for w in sorted(widths)[:3])
        return f"{what}: {labels:,} names but a {len(rows):,}x{shown} matrix"
    return None


def check_shape(machine: Any, name: str) -> None:
    """Refuse a capture whose matrices do not match their labels (3,000 labels over a 24x24
    matrix made ``topo`` run for minutes). ``machine`` is a Capture or its plain data.

    Raises:
        PcidocError: one line naming the matrix and its shape.
    """

    def get(node: Any, key: str, kind: type = list) -> Any:
        value = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
        return value if isinstance(value, kind) else kind()  # unvalidated data: any type

    topology, p2p = get(machine, "topology", object), get(machine, "p2p", object)
    problems = []
    if topology is not None:
        labels = get(topology, "labels")
        problems.append(_matrix_problem("topology", len(labels), get(topology, "links")))
    if p2p is not None:
        count = len(get(p2p, "gpus"))
        for cap, matrix in sorted(get(p2p, "matrices", dict).items()):
            rows = matrix if isinstance(matrix, list) else []
            problems.append(_matrix_problem(f"p2p.matrices.{cap}", count, rows))
        peers = get(p2p, "can_access_peer")
        problems.append(_matrix_problem("p2p.can_access_peer", count, peers))
    found = next((p for p in problems if p), None)
    if found:
        raise PcidocError(f"{clean_line(name)}: {found}; the capture is damaged or was edited")


def load_capture(path: str | os.PathLike[str]) -> Capture:
    """Load and validate a capture file (``-``: standard input).

    Raises:
        PcidocError: the file is missing, unreadable, not JSON, not a capture, from a newer
            major version, or has missing/wrong-typed fields.
    """
    from pcidoc.fileio import MAX_CAPTURE_BYTES, read_input

    file = os.fspath(path)  # named in messages as given (pathlib is not worth its import here)
    data = read_input(file, limit=MAX_CAPTURE_BYTES, what="a capture", stdin=True)
    return load_capture_bytes(data, _label(file))


def load_capture_bytes(data: bytes, label: str) -> Capture:
    """:func:`load_capture` of bytes already read (``label`` names them in messages)."""
    from pcidoc.fileio import MAX_CAPTURE_BYTES, decode_text
    from pcidoc.sanitize import json_bytes_are_clean, json_text_is_clean

    if len(data) > MAX_CAPTURE_BYTES:
        raise PcidocError(
            f"{clean_line(label)}: larger than {MAX_CAPTURE_BYTES // 2**20} MiB, more than any "
            "capture; not loaded"
        )
    _check_size_shape(data, label)
    file = label
    capture = None
    if json_bytes_are_clean(data):  # ASCII with nothing to clean: straight to the parser
        capture = _validate_current_capture(data, _label(file))
        text, clean = ("", True) if capture is not None else (data.decode("ascii"), True)
    else:
        text = decode_text(data, _label(file), strict=True)
        clean = json_text_is_clean(text)
        if clean:
            capture = _validate_current_capture(text, _label(file))
    if capture is None:
        parsed = _parse_json(text, _label(file))
        if isinstance(parsed, (dict, list)):
            _strings_parsed(parsed, _label(file))  # too many items
        capture = capture_from_data(parsed, _label(file), clean=not clean)
    check_shape(capture, _label(file))
    return capture


def _validate_current_capture(text: str | bytes, name: str = "") -> Capture | None:
    """The capture in ``text`` (a str, or the bytes of an ASCII file), parsed and validated in
    one step by ``pydantic_core``, or ``None`` when it is anything but a valid
    ``pcidoc.capture/1`` object whose text needs no cleaning.

    An optimisation of the strict path (:func:`_parse_json`, :func:`_unwrap`, validation), not a
    second set of rules: for any text it accepts it builds the same capture, and every other
    text (a report, an error of any kind, numbers the strict parser refuses) goes the strict way,
    which gives the one-line error. The caller has checked that the text holds nothing to clean.
    """
    from pcidoc.model.capture import Capture
    from pcidoc.model.compiled import core

    try:
        # Parsed to Python objects first: a failing validation then refers to the parsed
        # values, where validating the JSON text copied an object into every "missing field"
        # error (300 times the file's size in memory). Every short string is cached, not only
        # keys: a capture repeats its link classes, states and units thousands of times, and
        # one shared object each halves the parser's page faults (-30 % of its CPU, 72 GPUs).
        data = core().from_json(text, allow_inf_nan=False, cache_strings="all")
        if not isinstance(data, dict):
            return None
        if _strings_parsed(data, name) != _strings_written(text):
            return None  # a repeated key or a number too large (the strict path names them)
        check_shape(data, name)  # before validation: 900,000 labels need not be validated
        capture = Capture.model_validate(data)
    except PcidocError:
        if name:  # too many items: refused here rather than parsed a second time
            raise
        return None
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return None
    # The schema tag has a default; a file without one is not a capture.
    return capture if "schema_" in capture.model_fields_set else None


def _strings_written(text: str | bytes) -> int:
    """Strings (keys and string values) written in a valid JSON text: its quotes, less the
    escaped ones, halved. Outside a string a quote opens or closes one and no backslash occurs;
    inside one a backslash starts an escape, so once the escaped backslashes (pairs, read left
    to right as the parser reads them) are gone, a backslash before a quote escapes it."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if b"\\" not in data:  # the usual capture: one C-speed count
        return data.count(b'"') // 2
    data = data.replace(b"\\\\", b"")
    return (data.count(b'"') - data.count(b'\\"')) // 2


def _strings_parsed(node: Any, name: str = "") -> int:
    """Strings (keys and string values) in parsed JSON: fewer than :func:`_strings_written`
    when a key repeated in one object (the parser kept it once). -1 when a number overflowed
    to an infinity, which the strict parser refuses (the engine's parser reads ``1e400`` as
    ``inf``; NaN and Infinity tokens it refuses itself).

    Raises:
        PcidocError: an array or object holds more than :data:`MAX_ITEMS` items.
    """
    strings = 0
    overflow = False
    stack = [node]
    while stack:
        item = stack.pop()
        if len(item) > MAX_ITEMS:
            raise PcidocError(
                f"{clean_line(name)}: a JSON {'object' if type(item) is dict else 'array'} "
                f"holds {len(item):,} items, more than the {MAX_ITEMS:,} of any real capture"
            )
        values = item
        if type(item) is dict:
            strings += len(item)
            values = item.values()
        for value in values:
            kind = type(value)
            if kind is str:
                strings += 1
            elif kind is dict or kind is list:
                stack.append(value)
            elif kind is float and value - value:  # inf - inf is NaN; a finite float gives 0
                overflow = True
    return -1 if overflow else strings


def dump_json(model: Any) -> str:
    """Serialize a pcidoc model (capture or report) as stable, indented JSON."""
    return model.model_dump_json(by_alias=True, indent=2) + "\n"


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` with :func:`pcidoc.fileio.write_output` (gzip for ``.gz``).

    Raises:
        PcidocError: the target is not a regular file, its folder is missing or not
            writable, or the write failed.
    """
    from pathlib import Path

    from pcidoc.fileio import write_output

    write_output(path, text)
    return Path(path)


def capture_text(capture: Capture) -> str:
    """The capture as file text, stamping pcidoc's version and the time when missing."""
    if capture.origin.pcidoc_version is None:
        capture.origin.pcidoc_version = __version__
    if capture.origin.created_at is None:
        capture.origin.created_at = utc_now()
    return dump_json(capture)


def save_capture(capture: Capture, path: str | os.PathLike[str]) -> Path:
    """Write a capture file safely (see :func:`pcidoc.fileio.write_output`), stamping version
    and time when missing."""
    return write_atomic(path, capture_text(capture))


# ------------------------------------------------------------------------------ redaction
#
# Redaction works BY FIELD and BY TOKEN, never by substring: a host called `on`, `pc` or
# `intel` must not rewrite `intel_iommu=on`, `pcie` or the CPU vendor. What is removed and what
# is kept is documented in docs/collection.md ("Redaction"); keep the two in step.

_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_UUID_RE = lazy(
    r"(?<![0-9A-Za-z-])(?:GPU-|MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
    r"-[0-9a-fA-F]{12}(?![0-9A-Za-z-])"
)
_MAC_RE = lazy(r"(?<![0-9A-Za-z:])[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}(?![0-9A-Za-z:])")
_GUID_RE = lazy(r"(?<![0-9A-Za-z:])[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}(?![0-9A-Za-z:])")
_IPV4_RE = lazy(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?![\w.])"
)
# IPv6 only where addresses are expected (environment values, kernel command line): it needs
# "::" or eight groups, so PCI addresses (0000:18:00.0) never match.
_IPV6_RE = lazy(
    r"(?<![\w:.])(?:(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"
    r"|(?:[0-9a-fA-F]{1,4}:){0,6}[0-9a-fA-F]{0,4}::(?:[0-9a-fA-F]{1,4}:){0,6}[0-9a-fA-F]{0,4})"
    r"(?:%\w+)?(?![\w:])"
)
_HOME_RE = lazy(r"(?P<root>/(?:home|Users|u|users|scratch/users)/)(?P<user>[^/\s:;,'\"]+)")
_TILDE_RE = lazy(r"(?<![\w/])~(?P<user>[A-Za-z_][\w.-]*)")
# The folders of an absolute path (up to its last "/"), inside any text; the file name stays.
_FOLDERS_RE = lazy(r"(?<![\w.~-])/(?:[^\s/:;,'\"=()\[\]<>|]+/)+")
_SYSTEM_ROOTS = frozenset(
    {
        "usr", "lib", "lib32", "lib64", "libx32", "etc", "proc", "sys", "dev", "bin", "sbin",
        "boot", "run", "opt", "var", "nix", "snap",
    }
)  # fmt: skip
"""Top folders whose paths name software and the system, not people or projects: kept."""

_SERIAL_KEYS = frozenset({"serial", "serial_number", "board_serial"})
_VERSION_KEYS = frozenset(
    {"kernel", "driver_version", "nvml_version", "cuda_driver_version", "version", "os"}
)
_FREE_TEXT_KEYS = frozenset(
    {
        "note", "path", "citation", "warnings", "read", "source", "context", "detail", "message",
        # imported NCCL evidence (capture.evidence): quoted log lines and what they name
        "quote", "net_plugin_quote", "lnksta_quote", "bootstrap_if", "problems", "address",
    }
)  # fmt: skip
_HOST_KEYS = frozenset({"hostname", "host", "hosts"})

NCCL_KNOBS: frozenset[str] = frozenset(
    {
        "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
        "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_DIRECT_DISABLE", "NCCL_P2P_READ_ENABLE",
        "NCCL_P2P_USE_CUDA_MEMCPY", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE",
        "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_SHM_DISABLE", "NCCL_SHM_USE_CUDA_MEMCPY",
        "NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_IB_GDR_LEVEL", "NCCL_IB_GID_INDEX",
        "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_SL", "NCCL_IB_TC",
        "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_IB_ADAPTIVE_ROUTING",
        "NCCL_IB_CUDA_SUPPORT", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_MERGE_NICS",
        "NCCL_NET", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_NET_DISABLE_INTRA",
        "NCCL_NET_SHARED_BUFFERS", "NCCL_NET_SHARED_COMMS", "NCCL_NET_PLUGIN",
        "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_NTHREADS",
        "NCCL_NSOCKS_PERTHREAD", "NCCL_CROSS_NIC", "NCCL_COLLNET_ENABLE", "NCCL_NVLS_ENABLE",
        "NCCL_MNNVL_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE",
        "NCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_DISABLED_P2P", "NCCL_LAUNCH_MODE",
        "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS",
        "NCCL_NTHREADS", "NCCL_BUFFSIZE", "NCCL_TREE_THRESHOLD", "NCCL_SINGLE_RING_THRESHOLD",
        "NCCL_LL_THRESHOLD", "NCCL_LL128_NTHREADS", "NCCL_NVB_DISABLE", "NCCL_PXN_DISABLE",
        "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_CHECKS_DISABLE", "NCCL_CHECK_POINTERS",
        "NCCL_ASYNC_ERROR_HANDLING", "NCCL_BLOCKING_WAIT", "NCCL_CONNECT_TIMEOUT",
        "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_DEBUG_FILE", "NCCL_GRAPH_FILE",
        "NCCL_GRAPH_DUMP_FILE", "NCCL_WORK_FIFO_DEPTH", "NCCL_RUNTIME_CONNECT",
        "NCCL_NVLS_CHUNKSIZE", "NCCL_CTA_POLICY", "NCCL_COMM_BLOCKING",
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
        "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT",
        "TORCH_NCCL_ENABLE_MONITORING", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
        "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
        "TORCH_NCCL_AVOID_RECORD_STREAMS", "TORCH_NCCL_USE_COMM_NONBLOCKING",
        "TORCH_NCCL_HIGH_PRIORITY",
    }
)  # fmt: skip
"""Environment variables whose values are tuning knobs (levels, switches, sizes, device and
interface names, paths): kept by ``--redact`` after addresses, user names and home paths in
them are replaced. Every other variable's value is replaced (``NCCL_COMM_ID``, ``NCCL_HOSTID``,
plugin options that may carry credentials or addresses)."""

# Kernel parameters whose values carry names or addresses (Documentation/admin-guide/
# kernel-parameters.txt, nfsroot.rst): `ip=<client>:<server>:<gw>:<mask>:<hostname>:...`.
_CMDLINE_SECRET_KEYS = frozenset(
    {"hostname", "nfsroot", "ip", "nfsaddrs", "netroot", "iscsi_initiator"}
)


def distinctive(name: str) -> bool:
    """Whether a host name is worth redacting where it appears inside prose.

    ``gpu-node-17``, ``dgx03`` or ``trainbox`` identify a machine; ``pc``, ``on``, ``live`` or
    ``intel`` are ordinary words there, identify no one, and replacing them would rewrite
    text that is not about the host. The ``hostname`` field itself is always replaced.
    """
    return len(name) >= 6 or any(not c.isalpha() for c in name)


class _Redactor:
    """Replaces identifying values with stable placeholders (same input -> same output).

    ``mapping`` records every original -> placeholder pair, so that a report's findings can
    be redacted with exactly the replacements made in its machine (:func:`redact_report`).
    """

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        self.hostnames: set[str] = set()
        self.users: set[str] = set()
        self.mapping: dict[str, str] = {}
        self._token_re: re.Pattern[str] | None = None

    # -- placeholders
    def placeholder(self, kind: str, original: str) -> str:
        key = f"{kind}:{original}"
        if key not in self.seen:
            n = self.counters.get(kind, 0) + 1
            self.counters[kind] = n
            if kind == "uuid":
                prefix = original[:4] if original[:4] in ("GPU-", "MIG-") else ""
                value = f"{prefix}00000000-0000-0000-0000-{n:012d}"
            elif kind == "mac":
                value = f"02:00:00:00:{n // 256:02x}:{n % 256:02x}"
            elif kind == "guid":
                value = f"0000:0000:0000:{n:04x}"
            elif kind == "ip":
                value = f"192.0.2.{n}" if n < 255 else f"198.51.100.{n % 255}"  # RFC 5737
            elif kind == "ipv6":
                value = f"2001:db8::{n:x}"  # RFC 3849 documentation prefix
            else:
                value = f"redacted-{kind}-{n}"
            self.seen[key] = value
            if kind != "folder":  # a folder name is replaced inside paths only, not as a word
                self.mapping[original] = value
            self._token_re = None
        return self.seen[key]

    def _uuid(self, match: re.Match[str]) -> str:
        text = match.group(0)
        bare = text[4:] if text[:4] in ("GPU-", "MIG-") else text
        if bare == _ZERO_UUID:
            return text  # a sentinel (no NVLink fabric cluster), not an identity
        return self.placeholder("uuid", text)

    # -- value classes
    def identifiers(self, value: str) -> str:
        """UUIDs (except the all-zero sentinel), MAC addresses, InfiniBand GUIDs."""
        if "-" in value:
            value = _UUID_RE.sub(self._uuid, value)
        if ":" in value:
            value = _MAC_RE.sub(lambda m: self.placeholder("mac", m.group(0)), value)
            value = _GUID_RE.sub(lambda m: self.placeholder("guid", m.group(0)), value)
        return value

    def addresses(self, value: str, ipv6: bool = False) -> str:
        if "." in value:
            value = _IPV4_RE.sub(lambda m: self._ip(m.group(0)), value)
        if ipv6 and ("::" in value or value.count(":") >= 7):
            value = _IPV6_RE.sub(lambda m: self.placeholder("ipv6", m.group(0)), value)
        return value

    def _ip(self, text: str) -> str:
        if text.startswith(("127.", "0.")) or text == "255.255.255.255":
            return text  # loopback / unspecified: not an identity, and meaningful
        return self.placeholder("ip", text)

    def paths(self, value: str) -> str:
        """User names in home paths (``/home/alice`` -> ``/home/redacted-user-1``), and the
        folder names of paths outside the system's own folders (``/srv/acme-corp/x.xml`` ->
        ``/srv/redacted-folder-1/x.xml``); the file name and system paths stay."""
        if "/" in value:
            value = _HOME_RE.sub(lambda m: m.group("root") + self._user(m.group("user")), value)
            value = _FOLDERS_RE.sub(self._folders, value)
        if "~" in value:
            value = _TILDE_RE.sub(lambda m: "~" + self._user(m.group("user")), value)
        return value

    def _folders(self, match: re.Match[str]) -> str:
        parts = match.group(0).strip("/").split("/")
        if parts[0] in _SYSTEM_ROOTS:
            return match.group(0)
        kept = [
            part
            if part in (".", "..") or part.startswith("redacted-")
            else self.placeholder("folder", part)
            for part in parts[1:]
        ]
        return "/" + "/".join([parts[0], *kept]) + "/"

    def _user(self, name: str) -> str:
        if name.startswith("redacted-"):
            return name
        self.users.add(name)
        return self.placeholder("user", name)

    def tokens(self, value: str) -> str:
        """Known host and user names where they stand as whole tokens (not inside a word)."""
        hosts = {n for n in self.hostnames if distinctive(n)}
        names = sorted((n for n in hosts | self.users if n), key=len, reverse=True)
        if not names:
            return value
        if self._token_re is None:
            alternatives = "|".join(re.escape(n) for n in names)
            self._token_re = re.compile(rf"(?<![0-9A-Za-z])(?:{alternatives})(?![0-9A-Za-z])")
        return self._token_re.sub(lambda m: self.mapping.get(m.group(0), m.group(0)), value)

    def free_text(self, value: str) -> str:
        return self.tokens(self.paths(self.addresses(self.identifiers(value), ipv6=True)))

    # -- fields
    def host_name(self, value: str) -> str:
        return self.placeholder("host", value)

    def cmdline(self, value: str) -> str:
        out = []
        for token in value.split(" "):
            key, eq, arg = token.partition("=")
            if eq and key in _CMDLINE_SECRET_KEYS and arg:
                token = f"{key}=" + self.placeholder("value", arg)
            else:
                token = self.paths(self.addresses(self.identifiers(token), ipv6=True))
            out.append(token)
        return " ".join(out)

    def environment(self, env: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in env.items():
            if not isinstance(value, str):
                out[key] = value
            elif key not in NCCL_KNOBS:
                out[key] = self.placeholder("value", value) if value else value
            elif key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
                out[key] = ",".join(self._device_token(t) for t in value.split(","))
            else:
                out[key] = self.tokens(self.paths(self.addresses(self.identifiers(value), True)))
        return out

    def _device_token(self, token: str) -> str:
        """A UUID prefix (``GPU-8a1b``) maps to the same prefix of its GPU's placeholder."""
        stripped = token.strip()
        if stripped[:4] in ("GPU-", "MIG-") and not _UUID_RE.fullmatch(stripped):
            for original, value in self.mapping.items():
                if original.lower().startswith(stripped.lower()) and original[:4] == stripped[:4]:
                    return value[: len(stripped)]
            return self.placeholder("uuid-prefix", stripped)
        return self.identifiers(token)

    def walk(self, node: Any, key: str | None = None) -> Any:
        if isinstance(node, dict):
            if key == "unavailable":  # field name -> reason: reasons are prose
                return {k: self.walk(v, "unavailable") for k, v in node.items()}
            if key == "env" and all(isinstance(v, str) for v in node.values()):
                return self.environment(node)  # NCCL variables quoted by a log
            if key == "env_quotes":
                return {
                    k: self.free_text(v)
                    if k in NCCL_KNOBS or not isinstance(v, str)
                    else self.placeholder("value", v)
                    for k, v in node.items()
                }
            return {k: self.walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [self.walk(v, key) for v in node]
        if not isinstance(node, str) or not node:
            return node
        if key == "unavailable":
            return self.free_text(node)
        if key in _SERIAL_KEYS:
            return self.placeholder("serial", node)
        if key in _HOST_KEYS:
            return self.host_name(node)
        if key in _VERSION_KEYS:
            return node
        if key in _FREE_TEXT_KEYS or "/" in node:
            # Every other string with a path in it (evidence.topo_file_env...) is free text.
            return self.free_text(node)
        return self.identifiers(node)


def _redact_data(data: dict[str, Any], redactor: _Redactor) -> dict[str, Any]:
    host = data.get("host") or {}
    hostname = host.get("hostname")
    if hostname:
        redactor.hostnames.add(hostname)
        redactor.host_name(hostname)
        short = hostname.split(".")[0]
        if short and short != hostname:
            redactor.hostnames.add(short)
            redactor.host_name(short)
    # Host names in imported NCCL evidence are learned first, so that quoted log lines lose
    # them as tokens too.
    for name in _evidence_hosts(data.get("evidence")):
        redactor.hostnames.add(name)
        redactor.host_name(name)
    # Map the GPUs' UUIDs first, so CUDA_VISIBLE_DEVICES prefixes find their placeholders.
    for gpu in data.get("gpus") or []:
        if isinstance(gpu.get("uuid"), str):
            redactor.identifiers(gpu["uuid"])
    # Home paths anywhere teach the user names, which are then redacted as tokens elsewhere.
    for source in (data.get("origin") or {}).get("sources") or []:
        if isinstance(source.get("path"), str):
            redactor.paths(source["path"])
    for value in (host.get("environment") or {}).values():
        if isinstance(value, str):
            redactor.paths(value)
    redacted = redactor.walk(data)
    red_host = redacted.get("host") or {}
    if isinstance(host.get("cmdline"), str):
        red_host["cmdline"] = redactor.cmdline(host["cmdline"])
    if isinstance(host.get("environment"), dict):
        red_host["environment"] = redactor.environment(host["environment"])
    originals = host.get("processes") or []
    for proc, original in zip(red_host.get("processes") or [], originals, strict=False):
        if isinstance(original.get("name"), str) and original["name"]:
            proc["name"] = redactor.placeholder("process", original["name"])
    origin = redacted.setdefault("origin", {})
    origin["redacted"] = True
    return redacted


def _evidence_hosts(node: Any, key: str | None = None) -> list[str]:
    """Every string under a ``host``/``hosts`` key of the evidence section."""
    found: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            found.extend(_evidence_hosts(v, k))
    elif isinstance(node, list):
        for v in node:
            found.extend(_evidence_hosts(v, key))
    elif isinstance(node, str) and node and key in ("host", "hosts"):
        found.append(node)
    return found


def redact_capture(capture: Capture) -> Capture:
    """Return a copy with identifying values replaced by stable placeholders.

    Replaced (by field, or as whole tokens, never as substrings): the hostname, serials,
    UUIDs (the all-zero fabric cluster UUID is a sentinel and stays), MAC addresses and
    InfiniBand GUIDs, IP addresses (environment, kernel command line, free text), user names
    in home paths, values of environment variables that are not known tuning knobs
    (:data:`NCCL_KNOBS`), process names, and the host/user names where they appear as tokens
    in file paths and notes. Everything a check reads (GPU and CPU models, vendors, kernel
    arguments, link states, bus ids, matrices, counters, measurements) is kept, so a redacted
    capture gets the same verdicts. Placeholders are stable within the capture: the same
    UUID always maps to the same placeholder, so cross-references stay consistent.
    """
    redacted = _redact_data(capture.model_dump(by_alias=True, mode="json"), _Redactor())
    from pcidoc.model.capture import Capture

    return Capture.model_validate(redacted)


def redact_report(report: Any) -> Any:
    """A copy of a report whose machine is redacted as :func:`redact_capture` does, and whose
    findings (summaries, evidence, remediation, subjects) and source name have the same
    values replaced, so the report cannot reintroduce what the machine no longer shows.

    The findings are not recomputed: they are the ones computed on the real machine.
    """
    redactor = _Redactor()
    data = report.model_dump(by_alias=True, mode="json")
    data["machine"] = _redact_data(data["machine"], redactor)
    replacements = {
        original: value
        for original, value in redactor.mapping.items()
        if original not in redactor.hostnames or distinctive(original)
    }
    names = sorted(replacements, key=len, reverse=True)
    pattern = (
        re.compile(
            r"(?<![0-9A-Za-z])(?:" + "|".join(re.escape(n) for n in names) + r")(?![0-9A-Za-z])"
        )
        if names
        else None
    )

    def scrub(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: scrub(v) for k, v in node.items()}
        if isinstance(node, list):
            return [scrub(v) for v in node]
        if isinstance(node, str) and node:
            node = redactor.paths(redactor.addresses(redactor.identifiers(node)))
            if pattern is not None:
                node = pattern.sub(lambda m: replacements[m.group(0)], node)
        return node

    data["checks"] = scrub(data.get("checks") or [])
    source = data.get("source") or {}
    for key in ("path", "name"):
        if isinstance(source.get(key), str):
            source[key] = redactor.free_text(source[key])
    return type(report).model_validate(data)
