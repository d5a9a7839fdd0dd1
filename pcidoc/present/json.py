"""JSON output: the full report (``pcidoc.report/1``) and the topology part (``pcidoc.topology/1``).

Both functions return the text to write to stdout: data only, UTF-8, indent 2, a trailing
newline, keys in a stable order. This module is on the ``check --json`` and ``topo --json``
paths, so it imports only the standard library and pcidoc's models (no rich), and it never
re-validates a model: the report is written by pydantic_core's JSON writer without its package
(:mod:`pcidoc.model.litejson`), the topology is read straight off the capture's attributes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from pcidoc.model.capture import Capture
    from pcidoc.model.report import Report

TOPOLOGY_SCHEMA = "pcidoc.topology/1"
"""Schema tag of :func:`topology_json` output."""


def report_json(report: Report) -> str:
    """Serialize a report as ``pcidoc.report/1`` JSON.

    Keys follow the model's field order (``schema`` first), aliases are used (``schema`` rather
    than ``schema_``), and the output ends with a newline.

    Args:
        report: The report to write.

    Returns:
        The JSON text.
    """
    return report_json_bytes(report).decode("utf-8")


def report_json_bytes(report: Report) -> bytes:
    """:func:`report_json` as UTF-8 bytes, as the serializer writes them (a megabyte on a
    72-GPU machine: ``check --json`` writes these to stdout without decoding and re-encoding)."""
    from pcidoc.model.lite import LiteModel

    if isinstance(report, LiteModel):  # the usual case: not the pydantic_core package's import
        from pcidoc.model.litejson import json_bytes

        return json_bytes(report, by_alias=True, indent=2) + b"\n"
    serializer = type(report).__pydantic_serializer__  # pydantic models
    return serializer.to_json(report, by_alias=True, indent=2) + b"\n"


def topology_dict(capture: Capture) -> dict[str, Any]:
    """The topology part of a capture as plain JSON-ready data (``pcidoc.topology/1``).

    Args:
        capture: The machine.

    Returns:
        ``{"schema", "labels", "links", "gpus", "nics", "source"}``: ``links[i][j]`` is the link
        class between ``labels[i]`` and ``labels[j]`` (``null`` when unknown); ``gpus`` carries
        ``index, name, bus_id, numa_node, numa_affinity, cpu_affinity``; ``nics`` carries
        ``label, name, bus_id, numa_node``; ``source`` says where the matrix came from.
    """
    topo = capture.topology
    gpu_fields = ("index", "name", "bus_id", "numa_node", "numa_affinity", "cpu_affinity")
    nic_fields = ("label", "name", "bus_id", "numa_node")
    return {
        "schema": TOPOLOGY_SCHEMA,
        "labels": list(topo.labels),
        "links": [list(row) for row in topo.links],
        "gpus": [{name: getattr(gpu, name) for name in gpu_fields} for gpu in capture.gpus],
        "nics": [{name: getattr(nic, name) for name in nic_fields} for nic in capture.nics],
        "source": topo.source,
    }


def _dumps(value: Any) -> str:
    import json  # not at the top: the report's path (check --json) never needs it

    return json.dumps(value, ensure_ascii=False)


def topology_json(capture: Capture) -> str:
    """Serialize the topology of a capture as ``pcidoc.topology/1`` JSON.

    The layout is ``json.dumps(..., indent=2)`` except that each matrix row and each GPU/NIC
    object sits on one line, so a 72-GPU matrix stays a screenful per row rather than one cell
    per line. Any JSON parser reads it the same.

    Args:
        capture: The machine.

    Returns:
        The JSON text, ending with a newline.
    """
    data = topology_dict(capture)

    def rows(items: list[Any]) -> str:
        if not items:
            return "[]"
        return "[\n" + ",\n".join(f"    {_dumps(item)}" for item in items) + "\n  ]"

    parts = [
        f'  "schema": {_dumps(data["schema"])}',
        f'  "labels": {_dumps(data["labels"])}',
        f'  "links": {rows(data["links"])}',
        f'  "gpus": {rows(data["gpus"])}',
        f'  "nics": {rows(data["nics"])}',
        f'  "source": {_dumps(data["source"])}',
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"
