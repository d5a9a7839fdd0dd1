"""The doctor: pure checks over facts and measurements, and the report they make."""

from pcidoc.doctor.runner import exit_code_for, run, select_checks

__all__ = ["exit_code_for", "run", "select_checks"]
