"""pcidoc.tui.screens."""
