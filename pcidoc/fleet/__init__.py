"""Fleet: many machines' captures compared (``pcidoc fleet``), two captures diffed
(``pcidoc diff``), Prometheus textfile output, and the headless ``pcidoc watch`` loop.

Nothing here imports textual or torch; ``prometheus_client`` loads only when a .prom file is
written. This package's ``__init__`` imports nothing so that building the CLI parser stays cheap:
import :mod:`pcidoc.fleet.analyze` and friends directly.
"""
