"""pcidoc.collect.importers."""
