"""pcidoc.tui.widgets."""
