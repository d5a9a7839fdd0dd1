"""``pcidoc watch``'s engine: one machine's live counters and checks over time, as change
events (:mod:`pcidoc.watch.watcher`) and a link history (:mod:`pcidoc.watch.flaps`). The
command itself is :mod:`pcidoc.cli.watch`.

Single-machine code, so it is not in :mod:`pcidoc.fleet` (many machines); it writes its
Prometheus textfile through :mod:`pcidoc.fleet.prom`, the one Prometheus writer. Nothing here
imports textual or torch. This ``__init__`` imports nothing.
"""
