"""``python -m pcidoc`` entry point."""

from pcidoc.cli import run

run()
