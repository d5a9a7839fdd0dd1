"""``python -m pcidoc`` entry point."""

from pcidoc.cli import main

raise SystemExit(main())
