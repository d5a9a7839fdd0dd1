"""pcidoc.probes: measurements of what the wiring delivers.

Parent side (never imports torch): :mod:`session` (``measure``, ``probe_command``),
:mod:`runner` (child processes, deadlines, process-group cleanup), :mod:`fake` (replayed
synthetic streams), :mod:`preflight`, :mod:`gpusets`, :mod:`stats`, :mod:`params`,
:mod:`protocol`. Child side (imports torch when a probe runs): :mod:`child` and the probe
modules :mod:`envprobe`, :mod:`transfer`, :mod:`p2p`, :mod:`allreduce`, :mod:`scaling`,
:mod:`collectives`, with :mod:`distributed`, :mod:`cudautil` and :mod:`linkstate`.
See docs/probes.md.
"""
