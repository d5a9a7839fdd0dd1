"""pcidoc.probes."""
