"""The ``nvml.health`` check."""

from __future__ import annotations

from pcidoc.doctor.checks._common import ev as _ev
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import Finding, check
from pcidoc.doctor.signatures import signature_findings
from pcidoc.model.cpulist import format_cpulist
from pcidoc.model.facts import Gpu
from pcidoc.model.report import Evidence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from pcidoc.model.report import Confidence

_BUG_REPORT = "Collect a driver log for the vendor or your admin: `sudo nvidia-bug-report.sh`."


_NO_DRIVER_ERRORS = ("LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED")


_HARDWARE_STATE_ERRORS = ("INSUFFICIENT_POWER", "IRQ_ISSUE", "RESET_REQUIRED", "GPU_IS_LOST")


def _kind(ctx: Context) -> str:
    return ctx.capture.origin.kind


def _driver_evidence(ctx: Context) -> list[Evidence]:
    drv = ctx.driver
    evidence = [
        _ev("NVML initialised", drv.nvml_available),
        _ev("NVML error", drv.nvml_error),
    ]
    if drv.nvml_error_message:
        evidence.append(_ev("NVML message", drv.nvml_error_message))
    evidence.append(_ev("NVIDIA GPUs on the PCI bus", drv.nvidia_pci_devices, "devices"))
    if drv.driver_version:
        evidence.append(_ev("driver version", drv.driver_version))
    return evidence


def _container(ctx: Context) -> str | None:
    return ctx.host.virtualization.container


# ------------------------------------------------------------------ NVML did not initialise


def _nvml_unavailable(ctx: Context) -> Finding:
    drv = ctx.driver
    error = (drv.nvml_error or "").upper() or None
    on_bus = drv.nvidia_pci_devices
    evidence = _driver_evidence(ctx)
    container = _container(ctx)

    if error == "LIB_RM_VERSION_MISMATCH":
        return Finding(
            "fail",
            "NVML refused to start: the loaded nvidia kernel module and the user-space driver "
            "library are different versions (driver upgraded without a reboot)",
            evidence=evidence,
            remediation=[
                "Compare the kernel module (`cat /proc/driver/nvidia/version`) with the library "
                "(`ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1` or `ldconfig -p | grep "
                "libnvidia-ml`).",
                "Reboot, or with no GPU process running reload the modules: `sudo rmmod "
                "nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`.",
                "In a container, the injected library must match the host driver: restart the "
                "container after the host driver changed.",
            ],
        )
    if error == "NO_PERMISSION":
        return Finding(
            "fail",
            "NVML refused access: this user may not open the NVIDIA device nodes",
            evidence=evidence,
            remediation=[
                "Check the device nodes: `ls -l /dev/nvidia*` (they should be readable and "
                "writable by you, usually mode 0666 or a group such as `video`).",
                "In a container, pass the GPUs with the NVIDIA Container Toolkit (`docker run "
                "--gpus all ...`, or a Kubernetes `nvidia.com/gpu` resource) instead of mounting "
                "device files by hand; the device cgroup must allow them.",
                "Run `pcidoc check` again as a user who can run `nvidia-smi`.",
            ],
        )
    if error == "OPERATING_SYSTEM":
        return Finding(
            "fail",
            "NVML was blocked by the operating system (cgroups or a security policy)",
            evidence=evidence,
            remediation=[
                "Check the device cgroup / security profile of this container or service: the "
                "NVIDIA devices (`/dev/nvidia*`) must be allowed.",
                "Try `nvidia-smi` in the same environment to confirm.",
            ],
        )

    if error is None or error in _NO_DRIVER_ERRORS:
        if on_bus == 0:
            return Finding(
                "info",
                "no NVIDIA GPU on this machine (none on the PCI bus); nothing to check",
                evidence=evidence,
                confidence="high",
            )
        what = {
            "LIBRARY_NOT_FOUND": "the NVML library (libnvidia-ml.so.1) was not found",
            "DRIVER_NOT_LOADED": "the NVIDIA kernel driver is not loaded",
            None: "NVML did not initialise",
        }[error]
        confidence: Confidence
        if on_bus:
            summary = f"{on_bus} NVIDIA GPU(s) on the PCI bus but {what}"
            confidence = "high"
        elif error == "DRIVER_NOT_LOADED":
            summary = f"{what} (the library is installed, so GPUs are expected)"
            confidence = "medium"
        else:
            return Finding(
                "info",
                f"{what} and the PCI bus could not be read: cannot tell whether this machine has "
                "NVIDIA GPUs",
                evidence=evidence,
                remediation=["List NVIDIA devices on the bus: `lspci -d 10de:`."],
                confidence="low",
            )
        if error == "LIBRARY_NOT_FOUND" or (error is None and container):
            remediation = [
                "In a container, start it with the NVIDIA runtime so the driver library is "
                "injected: `docker run --gpus all ...` (NVIDIA Container Toolkit) or the GPU "
                "operator on Kubernetes.",
                "On the host, install the NVIDIA driver's user-space part and check "
                "`ldconfig -p | grep libnvidia-ml`.",
            ]
        else:
            remediation = [
                "Load the driver: `sudo modprobe nvidia`; if it fails, read why with "
                "`sudo dmesg | grep -i -E 'nvrm|nvidia'`.",
                "After a kernel upgrade the module may not have been rebuilt: check "
                "`dkms status`; with Secure Boot on, an unsigned module is refused (`mokutil "
                "--sb-state`).",
                "Check which kernel driver owns the GPUs: `lspci -nnk -d 10de:` (vfio-pci or "
                "nouveau instead of nvidia explains it).",
            ]
        return Finding(
            "fail", summary, evidence=evidence, remediation=remediation, confidence=confidence
        )

    return Finding(
        "fail",
        f"NVML did not initialise ({error})",
        evidence=evidence,
        remediation=[
            "Run `nvidia-smi` to see the driver's own message.",
            "Read the kernel log: `sudo dmesg | grep -i -E 'nvrm|xid'`.",
            _BUG_REPORT,
        ],
        confidence="medium",
    )


# ----------------------------------------------------------------------- per-GPU failures


def _gpu_error(ctx: Context, gpu: Gpu) -> Finding:
    error = (gpu.nvml_error or "").upper()
    subject = gpu.label
    evidence = [_ev("NVML error", gpu.nvml_error, subject=subject)]
    if gpu.bus_id:
        evidence.append(_ev("bus id", gpu.bus_id, subject=subject))
    if error == "GPU_IS_LOST":
        return Finding(
            "fail",
            f"{subject} ({gpu.bus_id or 'bus id unknown'}) has fallen off the bus (NVML: GPU is "
            "lost)",
            subjects=[subject],
            evidence=evidence,
            remediation=[
                "Drain the node: jobs on this GPU will fail or hang.",
                "Look for Xid 79 and PCIe errors: `sudo dmesg | grep -i -E 'xid|aer'`.",
                _BUG_REPORT,
                "A GPU reset or a reboot is needed; if it happens again, check the slot, riser, "
                "power cables and PSU, then ask for hardware service.",
            ],
        )
    if error == "NO_PERMISSION":
        container = _container(ctx)
        hint = (
            f"this {container} container may not have been given this GPU"
            if container
            else "the device node of this GPU is not accessible"
        )
        return Finding(
            "fail",
            f"{subject}: NVML refused access ({hint})",
            subjects=[subject],
            evidence=evidence,
            remediation=[
                "Check `ls -l /dev/nvidia*` and that this user may open the GPU's device node.",
                "In a container, request the GPUs through the NVIDIA runtime (`--gpus all` or a "
                "`nvidia.com/gpu` resource) rather than mounting device files by hand.",
            ],
        )
    if error in _HARDWARE_STATE_ERRORS:
        return Finding(
            "fail",
            f"{subject}: NVML reports a hardware state problem ({error})",
            subjects=[subject],
            evidence=evidence,
            remediation=[
                "Check power cabling and the kernel log: `sudo dmesg | grep -i -E 'nvrm|xid'`.",
                "Reset the GPU with no process on it (`sudo nvidia-smi -r -i "
                f"{gpu.index}`) or reboot.",
                _BUG_REPORT,
            ],
        )
    return Finding(
        "warn",
        f"{subject}: NVML could not read this GPU ({error or 'unknown error'})",
        subjects=[subject],
        evidence=evidence,
        remediation=[f"Run `nvidia-smi -q -i {gpu.index}` to see what the driver reports."],
        confidence="medium",
    )


def _missing_gpus(ctx: Context) -> Finding | None:
    on_bus = ctx.driver.nvidia_pci_devices
    seen = len(ctx.gpus)
    if on_bus is None or on_bus <= seen:
        return None
    evidence = [
        _ev("NVIDIA GPUs on the PCI bus", on_bus, "devices"),
        _ev("GPUs answered by NVML", seen, "devices"),
    ]
    container = _container(ctx)
    if container or ctx.is_vm:
        where = f"a {container} container" if container else "a VM"
        return Finding(
            "info",
            f"NVML sees {seen} of {on_bus} NVIDIA GPUs on the bus; normal in {where} that was "
            "given only some of them",
            evidence=evidence,
            confidence="medium",
        )
    return Finding(
        "warn",
        f"NVML sees {seen} of the {on_bus} NVIDIA GPUs on the PCI bus: {on_bus - seen} did not "
        "initialise or belong to another driver",
        evidence=evidence,
        remediation=[
            "Check which driver owns each GPU: `lspci -nnk -d 10de:` (vfio-pci means it is "
            "reserved for a VM).",
            "Look for initialisation errors: `sudo dmesg | grep -i -E 'rminit|nvrm|xid'`.",
            _BUG_REPORT,
        ],
        confidence="medium",
    )


# ------------------------------------------------------------------------------ the check


@check("nvml.health")
def nvml_health(ctx: Context) -> list[Finding]:
    """Judge whether the driver and every GPU answer NVML.

    Args:
        ctx: The machine.

    Returns:
        Findings: a failure per unreachable driver or lost/refused GPU, and per known NVML,
        nvidia-smi or driver-version error line of the failure catalogue (``nvidia-smi``'s
        "Driver/library version mismatch", "Unable to determine the device handle"...); an info
        for machines without NVIDIA GPUs, a skip for captures that hold no NVML state.
    """
    gpu_errors = [g for g in ctx.gpus if g.nvml_error]
    findings = [_gpu_error(ctx, g) for g in gpu_errors]
    logged = signature_findings(ctx, "nvml.health")
    if _kind(ctx) == "import":
        # An import is a set of pasted outputs: the machine as it is now was not asked.
        return findings + logged if findings or logged else _import_state(ctx)
    return _live_state(ctx, findings) + logged


def _import_state(ctx: Context) -> list[Finding]:
    """What an import without NVML errors says about the driver (never that it works now)."""
    drv = ctx.driver
    if (drv.driver_version or ctx.gpus) and not drv.nvml_available:
        # No nvidia-smi output: never claim nvidia-smi worked. The tools that did run
        # (nvbandwidth, nccl-tests, CUDA samples) needed a driver, nothing more is shown.
        tools = sorted({f for src in ctx.capture.origin.sources for f in src.formats} - {"unknown"})
        return [
            Finding(
                "info",
                f"imported capture without nvidia-smi output: {', '.join(tools) or 'the tools'}"
                f" ran on {len(ctx.gpus)} GPU(s)"
                + (f" with driver {drv.driver_version}" if drv.driver_version else "")
                + "; NVML and the driver's health were not shown",
                evidence=[
                    _ev("driver version", drv.driver_version),
                    _ev("GPUs in the capture", len(ctx.gpus), "devices"),
                    _ev("nvidia-smi output in the paste", False),
                ],
                confidence="low",
                needs="run `pcidoc check --only nvml.health` on the machine itself, or import "
                "its `nvidia-smi -q` output",
            )
        ]
    if drv.driver_version or ctx.gpus:
        what = f"driver {drv.driver_version}" if drv.driver_version else "GPUs listed"
        return [
            Finding(
                "info",
                f"imported capture: nvidia-smi worked on the source machine ({what}, "
                f"{len(ctx.gpus)} GPU(s)); the driver's health now was not checked",
                evidence=[
                    _ev("driver version", drv.driver_version),
                    _ev("GPUs in the capture", len(ctx.gpus), "devices"),
                ],
                confidence="low",
                needs="run `pcidoc check --only nvml.health` on the machine itself",
            )
        ]
    return [
        Finding(
            "skip",
            "imported capture: no NVML/driver state in the pasted outputs",
            needs="run `pcidoc check --only nvml.health` on the machine itself, or import "
            "its `nvidia-smi -q` output",
        )
    ]


def _live_state(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """The live machine: NVML's own answer, GPUs missing from it, and the GPUs that answered."""
    if not ctx.driver.nvml_available:
        findings.insert(0, _nvml_unavailable(ctx))
        return findings

    missing = _missing_gpus(ctx)
    if missing:
        findings.append(missing)
    if not ctx.gpus and ctx.driver.nvidia_pci_devices in (None, 0) and not findings:
        return [
            Finding(
                "info",
                "NVML works but reports no GPU",
                evidence=_driver_evidence(ctx),
                confidence="medium",
            )
        ]
    healthy = [g for g in ctx.gpus if not g.nvml_error]
    if healthy:
        names = (
            ", ".join(g.label for g in healthy)
            if len(healthy) <= 4
            else f"GPUs {format_cpulist({g.index for g in healthy})}"
        )
        version = ctx.driver.driver_version or "version unknown"
        findings.append(
            Finding(
                "pass",
                f"NVML reachable (driver {version}); {len(healthy)} GPU(s) answered: {names}",
                subjects=[],
                evidence=[
                    _ev("driver version", ctx.driver.driver_version),
                    _ev("GPUs answered by NVML", len(healthy), "devices"),
                ],
            )
        )
    return findings
