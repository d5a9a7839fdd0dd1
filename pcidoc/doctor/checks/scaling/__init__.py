"""Scaling checks: all-reduce bus bandwidth against the link model of the GPUs used
(``scaling.allreduce``) and data-parallel scaling efficiency with an α–β explanation of where
the time goes (``scaling.efficiency``)."""
