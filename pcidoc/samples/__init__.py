"""pcidoc.samples."""
