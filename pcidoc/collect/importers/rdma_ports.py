"""RDMA device ports as the rdma tools print them: ``ibdev2netdev`` (``mlx5_0 port 1 ==> ibp26s0
(Down)``), ``ibstat`` (``CA 'mlx5_0'`` blocks with ``Port 1:``, ``State:``, ``Physical state:``,
``Rate:``, ``Link layer:``) and ``ibv_devinfo`` (``hca_id:`` blocks with ``port:``, ``state:
PORT_ACTIVE (4)``, ``phys_state:``, ``link_layer:``).

Each tool fills what it shows; the check joins ports by device and port. ``ibdev2netdev``'s
``(Up)``/``(Down)`` is the state of the network interface: on an InfiniBand port that is the
IPoIB interface, which is down wherever IPoIB is not configured while the port itself is
active (NVIDIA's ``ibdev2netdev`` script reads the interface's operstate). It is kept as the
interface's state, never as the port's.
"""

from __future__ import annotations

from pcidoc.collect.importers.fragment import Context, Fragment
from pcidoc.collect.importers.text import BUS_ID, Doc, lazy, to_float
from pcidoc.collect.importers.walk import each_line
from pcidoc.model.evidence import RdmaPort

FORMAT = "rdma-ports"

_HCA = r"[A-Za-z][\w.-]{0,40}"
_IBDEV2NETDEV_RE = lazy(
    rf"^\s*(?:{BUS_ID}\s+)?(?P<hca>{_HCA})"
    r"(?:\s+\([^)\n]{0,120}\)[^\n]{0,160}?)?\s+port\s+(?P<port>\d{1,3})\s+"
    r"(?:\((?P<pstate>[A-Z_]{2,20})\)\s+)?==>\s+(?P<netdev>\S{1,40})\s+\((?P<state>Up|Down)\)"
)
"""``mlx5_0 port 1 ==> ib0 (Up)``; with ``-v``: ``0000:3b:00.0 mlx5_0 (MT4123 - MCX653105A) ...
fw 20.28.1002 port 1 (ACTIVE) ==> ib0 (Up)``, where ``(ACTIVE)`` is the port's own state."""
_IBSTAT_CA_RE = lazy(rf"^\s*CA\s+'(?P<hca>{_HCA})'\s*$")
_DEVINFO_CA_RE = lazy(rf"^\s*hca_id:\s*(?P<hca>{_HCA})\s*$")
_IBSTAT_PORT_RE = lazy(r"^\s*Port\s+(?P<port>\d{1,3}):\s*$")
_DEVINFO_PORT_RE = lazy(r"^\s*port:\s*(?P<port>\d{1,3})\s*$")
_KEY_RE = lazy(r"^\s*(?P<key>[A-Za-z][A-Za-z_ ]{1,30}?)\s*:\s*(?P<value>\S[^\n]{0,80}?)\s*$")

_ACTIVE = frozenset({"active", "port_active"})
_INACTIVE = frozenset(
    {"down", "init", "initializing", "armed", "port_down", "port_init", "port_armed", "polling"}
)
_FIELDS = {
    "state": "state",
    "physical state": "physical",
    "phys_state": "physical",
    "rate": "rate",
    "link layer": "link_layer",
    "link_layer": "link_layer",
}
_MAX_PORTS = 4096


def _state_word(value: str) -> str:
    """``PORT_ACTIVE (4)`` -> ``PORT_ACTIVE``; ``Active`` stays."""
    return value.split("(")[0].strip()


def _is_active(state: str | None) -> bool | None:
    """True for an active port, False for a known inactive state, None when not told."""
    word = (state or "").lower()
    if word in _ACTIVE:
        return True
    return False if word in _INACTIVE else None


class _State:
    __slots__ = ("current", "hca", "ports", "tool")

    def __init__(self) -> None:
        self.ports: list[RdmaPort] = []
        self.tool = ""
        self.hca: str | None = None
        self.current: RdmaPort | None = None

    def start_port(self, port: int, line: str) -> None:
        self.current = None
        if self.hca is None or len(self.ports) >= _MAX_PORTS:
            return
        self.current = RdmaPort(tool=self.tool, hca=self.hca, port=port, quote=line.strip())
        self.ports.append(self.current)


def _ibdev2netdev(state: _State, line: str, index: int) -> bool:
    match = _IBDEV2NETDEV_RE.match(line)
    if match is None:
        return False
    state.current = state.hca = None
    if len(state.ports) < _MAX_PORTS:
        pstate = match.group("pstate")
        state.ports.append(
            RdmaPort(
                tool="ibdev2netdev",
                hca=match.group("hca"),
                port=int(match.group("port")),
                state=pstate,
                active=_is_active(pstate),
                netdev=match.group("netdev"),
                netdev_up=match.group("state") == "Up",
                quote=" ".join(line.split())[:200],
            )
        )
    return True


def _device(state: _State, line: str, index: int) -> bool:
    for tool, pattern in (("ibstat", _IBSTAT_CA_RE), ("ibv_devinfo", _DEVINFO_CA_RE)):
        match = pattern.match(line)
        if match:
            state.tool, state.hca, state.current = tool, match.group("hca"), None
            return True
    for pattern in (_IBSTAT_PORT_RE, _DEVINFO_PORT_RE):
        match = pattern.match(line)
        if match and state.hca is not None:
            state.start_port(int(match.group("port")), line)
            return True
    return False


def _field(state: _State, line: str, index: int) -> bool:
    port = state.current
    if port is not None and not line[:1].isspace():
        state.current = state.hca = None  # the tool's block ended (its fields are indented)
        return False
    match = _KEY_RE.match(line) if port is not None else None
    if port is None or match is None:
        return False
    name = _FIELDS.get(match.group("key").strip().lower())
    value = match.group("value")
    if name == "state":
        port.state = _state_word(value)
        port.active = _is_active(port.state)
        port.quote = f"{port.hca} port {port.port}: {line.strip()}"
    elif name == "physical":
        port.physical = _state_word(value)
    elif name == "rate":
        port.rate_gbps = to_float(value.split()[0])
    elif name == "link_layer":
        port.link_layer = value.split()[0]
    return True


def read(doc: Doc, ctx: Context) -> list[Fragment]:
    """The RDMA ports of ``doc`` (none when no rdma tool's output is in it)."""
    if not any(("==>" in line or "CA '" in line or "hca_id" in line) for line in doc.lines):
        return []
    state = _State()
    each_line(doc, state, _ibdev2netdev, _device, _field)
    ports = [p for p in state.ports if p.tool == "ibdev2netdev" or p.state is not None]
    if not ports:
        return []
    frag = Fragment(FORMAT)
    frag.evidence.rdma_ports.extend(ports)
    tools = sorted({p.tool for p in ports})
    active = sum(1 for p in ports if p.active)
    frag.read.append(
        f"{', '.join(tools)}: {len(ports)} RDMA port line(s)"
        + (f", {active} active" if any(p.active is not None for p in ports) else "")
    )
    return [frag]
