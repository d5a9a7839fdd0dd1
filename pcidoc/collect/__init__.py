"""pcidoc.collect."""
