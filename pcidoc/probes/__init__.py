"""pcidoc.probes: measurements of what the wiring delivers.

Parent side (never imports torch): :mod:`session` (``ProbeSession``, the orchestrator the CLI and
the TUI share; planning; ``probe_json``), :mod:`console` (the CLI's ``measure`` and ``pcidoc
probe``), :mod:`runner` (child processes, deadlines, signals, process-group cleanup),
:mod:`merge` (folding per-pair / per-N results, conditions), :mod:`preflight`, :mod:`gpusets`,
:mod:`stats`, :mod:`params`, :mod:`protocol`. Child side (imports torch when a probe runs):
:mod:`child` and the probe modules :mod:`envprobe`, :mod:`transfer`, :mod:`p2p`,
:mod:`allreduce`, :mod:`scaling`, :mod:`collectives`, with :mod:`distributed`, :mod:`cudautil`
and :mod:`linkstate`. The fake runner for tests lives in ``tests/fakes``. See docs/probes.md.
"""
