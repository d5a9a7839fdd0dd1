"""pcidoc.tui."""
