"""Schema tags of pcidoc's file formats (kept free of pydantic so fast paths can read them)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from typing import Final, Literal

CAPTURE_SCHEMA: Final[Literal["pcidoc.capture/1"]] = "pcidoc.capture/1"
CAPTURE_MAJOR = 1
REPORT_SCHEMA: Final[Literal["pcidoc.report/1"]] = "pcidoc.report/1"
REPORT_MAJOR = 1
