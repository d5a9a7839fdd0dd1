"""Schema tags of pcidoc's file formats (kept free of pydantic so fast paths can read them)."""

CAPTURE_SCHEMA = "pcidoc.capture/1"
CAPTURE_MAJOR = 1
REPORT_SCHEMA = "pcidoc.report/1"
REPORT_MAJOR = 1
