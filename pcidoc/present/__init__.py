"""pcidoc.present."""
