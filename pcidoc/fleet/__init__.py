"""Fleet: many machines' captures compared (``pcidoc fleet``), two captures diffed
(``pcidoc diff``), and Prometheus textfile output. Only code about many machines (or about
comparing them) lives here: the single-machine ``pcidoc watch`` loop is :mod:`pcidoc.watch`,
and the commands themselves are modules of :mod:`pcidoc.cli`.

Nothing here imports textual or torch; ``prometheus_client`` loads only when a .prom file is
written. This package's ``__init__`` imports nothing so that building the CLI parser stays cheap:
import :mod:`pcidoc.fleet.analyze` and friends directly.
"""
