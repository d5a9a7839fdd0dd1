"""A live capture carries strings pcidoc does not control (process names, environment values,
device names): terminal control sequences are removed from them where they enter."""

from __future__ import annotations

from pcidoc.collect.live import collect_live
from tests.collect.conftest import Box
from tests.collect.test_live import _box_backend


def test_live_strings_lose_their_control_sequences(box: Box) -> None:
    box.procfs.add_process(4242, "train\x1b]0;pwned\x07.py", cpus="8-15", mems="1")
    backend = _box_backend(gpu0={"name": "NVIDIA H100\x1b]52;c;eA==\x1b\\\x1bc"})
    capture = collect_live(
        sys_root=str(box.sys),
        proc_root=str(box.proc),
        etc_root=str(box.etc),
        backend=backend,
        environ={"NCCL_SOCKET_IFNAME": "eth0\x1b[2J\x9b31m", "HOME": "/root"},
        fs_root=str(box.fs),
    )
    assert capture.gpus[0].name == "NVIDIA H100"
    assert capture.host.environment["NCCL_SOCKET_IFNAME"] == "eth0"
    names = [p.name for p in capture.host.processes]
    assert names and all(name and "\x1b" not in name and "pwned" not in name for name in names)
