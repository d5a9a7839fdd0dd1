"""Where this process sits in a multi-node launch: torchrun's or Slurm's environment.

Pure functions over an environment mapping (tests pass a fake one); no torch here.

* **torchrun** sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``
  (the node rank), ``MASTER_ADDR``/``MASTER_PORT`` and, when its agent hosts the rendezvous
  store, ``TORCHELASTIC_USE_AGENT_STORE=True`` (then rank 0 must connect as a client).
* **Slurm** (``srun``) sets ``SLURM_PROCID`` (rank), ``SLURM_NTASKS`` (world), ``SLURM_LOCALID``,
  ``SLURM_NODEID`` (node rank), ``SLURM_NNODES`` and the node list
  (``SLURM_JOB_NODELIST`` / ``SLURM_STEP_NODELIST``, compressed like ``gpu[01-03,07],cpu5``);
  the master is the first host of the list. The port is ``MASTER_PORT`` when set, else
  ``20000 + SLURM_JOB_ID % 20000`` so that two jobs sharing a first node do not collide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pcidoc.errors import PcidocError

DEFAULT_PORT = 29500

MAX_NODES = 100_000
"""The most hosts a node list or ``SLURM_TASKS_PER_NODE`` may expand to (the largest Slurm
clusters have tens of thousands of nodes); checked before the list is built."""

MAX_WORLD = 1_000_000
"""The largest world size accepted (ranks); beyond it the variable is a mistake or hostile."""

_ASCII_INT = re.compile(r"[+-]?[0-9]{1,18}")


@dataclass(frozen=True)
class LaunchEnv:
    """This rank's place in the job."""

    launcher: str
    """``torchrun`` or ``slurm``."""
    rank: int
    world: int
    local_rank: int
    node_rank: int | None
    nodes: int | None
    """Node count the launcher announced (``None`` when it did not say)."""
    master_addr: str
    master_port: int
    agent_store: bool = False
    """True when torchrun's agent already hosts the store (rank 0 connects as a client)."""
    run_id: str = "pcidoc"
    node_hosts: tuple[str, ...] = ()
    """Slurm: the expanded node list, in node-rank order."""
    local_world: int | None = None
    """Ranks per node (torchrun's ``LOCAL_WORLD_SIZE``); ``None`` when unknown."""
    tasks_per_node: tuple[int, ...] = ()
    """Slurm: tasks on each node of ``node_hosts`` (``SLURM_TASKS_PER_NODE`` expanded)."""

    def expected_node(self, rank: int) -> str | None:
        """Where the launcher put ``rank``, to name a rank that never joined: Slurm's host
        under its default block distribution, or torchrun's node rank
        (``rank // LOCAL_WORLD_SIZE``, the same ``--nproc-per-node`` on every node)."""
        if self.node_hosts and self.tasks_per_node:
            first = 0
            for host, count in zip(self.node_hosts, self.tasks_per_node, strict=False):
                if first <= rank < first + count:
                    return f"{host} (by Slurm's block distribution)"
                first += count
            return None
        if self.local_world:
            return f"node rank {rank // self.local_world}"
        return None


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth != 0:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


_RANGE = re.compile(r"^([0-9]{1,9})(?:-([0-9]{1,9}))?$")


def _count_one(item: str) -> int:
    """How many names ``item`` expands to, without building them (a product over its groups)."""
    total = 1
    for body in re.findall(r"\[([^\]]*)\]", item):
        values = 0
        for piece in body.split(","):
            match = _RANGE.match(piece.strip())
            if not match:
                return 1  # _expand_one names the bad range
            lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
            values += max(0, hi - lo) + 1
        total *= values
        if total > MAX_NODES:
            return total
    return total


def _expand_one(item: str) -> list[str]:
    start = item.find("[")
    if start < 0:
        return [item]
    end = item.find("]", start)
    if end < 0:
        raise ValueError(f"unbalanced '[' in host {item!r}")
    prefix, body, rest = item[:start], item[start + 1 : end], item[end + 1 :]
    values: list[str] = []
    for piece in body.split(","):
        match = _RANGE.match(piece.strip())
        if not match:
            raise ValueError(f"bad range {piece!r} in host {item!r}")
        lo_text, hi_text = match.group(1), match.group(2)
        if hi_text is None:
            values.append(lo_text)
            continue
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise ValueError(f"descending range {piece!r} in host {item!r}")
        if hi - lo > 100_000:
            raise ValueError(f"range {piece!r} in host {item!r} is implausibly large")
        width = len(lo_text)  # Slurm pads to the width of the first number
        values.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    tails = _expand_one(rest) if rest else [""]
    return [f"{prefix}{v}{t}" for v in values for t in tails]


def expand_hostlist(text: str) -> list[str]:
    """Expand a Slurm host list: ``gpu[01-03,07],cpu5`` -> gpu01 gpu02 gpu03 gpu07 cpu5.

    Zero padding follows the range's first number (as ``scontrol show hostnames`` does);
    several bracket groups in one name expand as a product (``r[1-2]n[1-2]``).

    Raises:
        ValueError: malformed list.
    """
    items = _split_top_level(text.strip())
    total = 0
    for item in items:
        total += _count_one(item)
        if total > MAX_NODES:
            raise ValueError(f"host list expands to more than {MAX_NODES:,} hosts")
    hosts: list[str] = []
    for item in items:
        hosts.extend(_expand_one(item))
    return hosts


def expand_tasks_per_node(text: str) -> list[int]:
    """``SLURM_TASKS_PER_NODE`` (``2(x3),1``) -> ``[2, 2, 2, 1]``.

    Raises:
        ValueError: malformed value.
    """
    counts: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]{1,9})(?:\(x([0-9]{1,9})\))?\s*", part)
        if not match:
            raise ValueError(f"bad SLURM_TASKS_PER_NODE part {part[:40]!r}")
        repeat = int(match.group(2) or 1)
        if len(counts) + repeat > MAX_NODES:
            raise ValueError(f"SLURM_TASKS_PER_NODE names more than {MAX_NODES:,} nodes")
        counts.extend([int(match.group(1))] * repeat)
    return counts


def _int(environ: Mapping[str, str], name: str) -> int | None:
    value = environ.get(name)
    if value is None or value == "":
        return None
    if not _ASCII_INT.fullmatch(value.strip()):
        # int() would take Unicode digits ("١") and 5,000-digit numbers.
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise PcidocError(f"environment: {name}={shown!r} is not an integer")
    return int(value)


def launch_env(environ: Mapping[str, str]) -> LaunchEnv:
    """Read torchrun's (first) or Slurm's environment.

    Raises:
        PcidocError: neither launcher's variables are present, or they are inconsistent.
    """
    if "RANK" in environ and "WORLD_SIZE" in environ:
        rank, world = _int(environ, "RANK"), _int(environ, "WORLD_SIZE")
        addr = environ.get("MASTER_ADDR")
        port = _int(environ, "MASTER_PORT")
        if addr is None or port is None:
            raise PcidocError("environment: RANK/WORLD_SIZE set but MASTER_ADDR/MASTER_PORT not")
        assert rank is not None and world is not None
        local_world = _int(environ, "LOCAL_WORLD_SIZE")
        nodes = world // local_world if local_world else None
        return _checked(
            LaunchEnv(
                launcher="torchrun",
                rank=rank,
                world=world,
                local_rank=_int(environ, "LOCAL_RANK") or 0,
                node_rank=_int(environ, "GROUP_RANK"),
                nodes=nodes,
                master_addr=addr,
                master_port=port,
                agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true",
                # A restarted group shares the agent's store: keys of the earlier attempt must
                # not count as this attempt's joins.
                run_id=f"{environ.get('TORCHELASTIC_RUN_ID') or 'pcidoc'}."
                f"{environ.get('TORCHELASTIC_RESTART_COUNT') or 0}",
                local_world=local_world,
            )
        )
    if "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ:
        nodelist = (
            environ.get("SLURM_STEP_NODELIST")
            or environ.get("SLURM_JOB_NODELIST")
            or environ.get("SLURM_NODELIST")
        )
        hosts: list[str] = []
        if nodelist:
            try:
                hosts = expand_hostlist(nodelist)
            except ValueError as exc:
                raise PcidocError(f"environment: SLURM_JOB_NODELIST: {exc}") from None
        addr = environ.get("MASTER_ADDR") or (hosts[0] if hosts else None)
        if addr is None:
            raise PcidocError("environment: Slurm job without SLURM_JOB_NODELIST or MASTER_ADDR")
        port = _int(environ, "MASTER_PORT")
        if port is None:
            job = _int(environ, "SLURM_JOB_ID")
            port = DEFAULT_PORT if job is None else 20000 + job % 20000
        rank, world = _int(environ, "SLURM_PROCID"), _int(environ, "SLURM_NTASKS")
        assert rank is not None and world is not None
        tasks: list[int] = []
        if environ.get("SLURM_TASKS_PER_NODE"):
            try:
                tasks = expand_tasks_per_node(environ["SLURM_TASKS_PER_NODE"])
            except ValueError as exc:
                raise PcidocError(f"environment: {exc}") from None
        run_id = f"slurm-{environ.get('SLURM_JOB_ID', '0')}.{environ.get('SLURM_STEP_ID', '0')}"
        return _checked(
            LaunchEnv(
                launcher="slurm",
                rank=rank,
                world=world,
                local_rank=_int(environ, "SLURM_LOCALID") or 0,
                node_rank=_int(environ, "SLURM_NODEID"),
                nodes=_int(environ, "SLURM_NNODES") or (len(hosts) or None),
                master_addr=addr,
                master_port=port,
                run_id=run_id,
                node_hosts=tuple(hosts),
                tasks_per_node=tuple(tasks),
            )
        )
    raise PcidocError(
        "probe fabric runs on every rank of a torchrun or srun launch (no RANK/WORLD_SIZE or "
        "SLURM_PROCID/SLURM_NTASKS in the environment); see docs/fleet.md"
    )


def _checked(env: LaunchEnv) -> LaunchEnv:
    if env.world < 1:
        raise PcidocError(f"environment: world size {env.world} is not positive")
    if env.world > MAX_WORLD:
        raise PcidocError(
            f"environment: world size {env.world} is more than the {MAX_WORLD:,} ranks "
            "pcidoc accepts; check WORLD_SIZE / SLURM_NTASKS"
        )
    if not 0 <= env.rank < env.world:
        raise PcidocError(f"environment: rank {env.rank} is outside world size {env.world}")
    if not 0 < env.master_port < 65536:
        raise PcidocError(f"environment: master port {env.master_port} is not a TCP port")
    return env
