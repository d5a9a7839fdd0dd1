"""Tests of the PCIe checks: pcie.link-speed, pcie.errors, pcie.shared-uplink."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcidoc.doctor import config, run
from pcidoc.doctor.checks.pcie.errors import pcie_errors
from pcidoc.doctor.checks.pcie.link_speed import pcie_link_speed
from pcidoc.doctor.checks.pcie.shared_uplink import pcie_shared_uplink
from pcidoc.doctor.context import Context
from pcidoc.doctor.registry import load_checks
from pcidoc.doctor.runner import run_check
from pcidoc.model import Capture, PcieHop, ReportSource, TransferMeasurement
from pcidoc.model.facts import AcsControl
from pcidoc.model.report import CheckResult
from tests.builders import machine

STAMP = "2026-01-01T00:00:00Z"

# ----------------------------------------------------------------------------- helpers


def result(cap: Capture, check_id: str) -> CheckResult:
    """The merged result of one check, as the engine builds it."""
    return run_check(load_checks()[check_id], Context(cap))


def hop(
    bus: str,
    role: str | None,
    cur: int | None = 4,
    width: int | None = 16,
    max_gen: int | None = 4,
    max_width: int | None = 16,
    **fields: object,
) -> PcieHop:
    """A PCIe port with its link state."""
    h = PcieHop(
        bus_id=bus,
        role=role,
        current_gen=cur,
        current_width=width,
        max_gen=max_gen,
        max_width=max_width,
    )
    for key, value in fields.items():
        setattr(h, key, value)
    return h


def switch_path(
    uplink_cur: int = 4,
    uplink_max: int = 4,
    root_max: int = 4,
    dsp: str = "a",
    usp_bus: str = "0000:10:00.0",
    root_bus: str = "0000:00:01.0",
) -> list[PcieHop]:
    """GPU -> switch downstream port -> switch upstream port -> root port."""
    return [
        hop(f"0000:11:0{dsp}.0" if len(dsp) == 1 else dsp, "switch_downstream"),
        hop(usp_bus, "switch_upstream", cur=uplink_cur, max_gen=uplink_max),
        hop(root_bus, "root_port", cur=uplink_cur, max_gen=root_max),
    ]


def gen4(n: int = 1, **kw: object) -> Capture:
    """n identical Gen4 x16 GPUs in P0."""
    return machine(n, gpu_fields={"name": "NVIDIA A100-SXM4-40GB", "gen": 4}, **kw)  # type: ignore[arg-type]


def set_link(
    cap: Capture,
    i: int,
    cur: int | None,
    width: int | None,
    max_gen: int | None = 4,
    max_width: int | None = 16,
) -> None:
    link = cap.gpus[i].pcie
    link.current_gen, link.current_width = cur, width
    link.max_gen, link.max_width = max_gen, max_width
    link.device_max_gen, link.device_max_width = max_gen, max_width


def transfer(
    gpu: int,
    gbps: float,
    gen: int | None = None,
    width: int | None = None,
    context: str | None = None,
) -> TransferMeasurement:
    return TransferMeasurement(
        gpu=gpu,
        direction="h2d",
        memory="pinned",
        bandwidth_gbps=gbps,
        link_gen_under_load=gen,
        link_width_under_load=width,
        context=context,
        method="cuda-events",
        source="probe",
    )


# ====================================================================== pcie.link-speed


@pytest.mark.parametrize(
    ("cur", "width", "pstate", "severity", "needle"),
    [
        (4, 16, 0, "pass", "at its max link (Gen4 x16)"),
        (3, 16, 0, "fail", "Gen3 of Gen4"),  # downtrained in P0
        (1, 16, 8, "info", "pcidoc check --probes quick"),  # idle Gen1: never a failure
        (1, 16, None, "info", "unknown P-state"),
        (4, 8, 0, "fail", "x8 of x16"),  # width below max in P0 is real
        (4, 8, 8, "warn", "width rarely drops at idle"),
    ],
)
def test_link_speed_table(cur, width, pstate, severity, needle):
    cap = gen4()
    set_link(cap, 0, cur, width)
    cap.gpus[0].pstate = pstate
    res = result(cap, "pcie.link-speed")
    assert res.severity == severity, res.summary
    assert needle in res.summary


def test_downtrained_summary_quantifies_the_lost_ceiling():
    cap = gen4()
    set_link(cap, 0, 3, 16)
    res = result(cap, "pcie.link-speed")
    assert "Gen3 x16 = 12 GB/s model vs Gen4 x16 = 24 GB/s model" in res.summary
    assert res.subjects == ["GPU0"]
    assert res.confidence == "medium"  # a P0 snapshot, not a measurement
    assert any("--probes quick" in step for step in res.remediation)
    units = {e.label: e.unit for e in res.evidence}
    assert units["link model now"] == "GB/s"


def test_idle_gen1_is_not_failed_even_far_below_max():
    cap = gen4(4)
    for i in range(4):
        set_link(cap, i, 1, 16, max_gen=5)
        cap.gpus[i].pstate = 8
    res = result(cap, "pcie.link-speed")
    assert res.severity == "info"
    assert "idle" in res.summary


def test_measurement_under_load_wins_over_the_idle_snapshot():
    cap = gen4()
    set_link(cap, 0, 1, 16)
    cap.gpus[0].pstate = 8
    cap.measurements.transfers.append(transfer(0, 25.0, gen=4, width=16))
    res = result(cap, "pcie.link-speed")
    assert res.severity == "pass"


def test_measured_downtraining_is_high_confidence():
    cap = gen4()
    set_link(cap, 0, 1, 16)
    cap.gpus[0].pstate = 8
    cap.measurements.transfers.append(transfer(0, 11.0, gen=3, width=16))
    res = result(cap, "pcie.link-speed")
    assert (res.severity, res.confidence) == ("fail", "high")
    assert "under load" in res.summary


def test_narrow_width_in_a_vm_is_low_confidence_warning():
    cap = gen4(hypervisor=True)
    set_link(cap, 0, 4, 8)
    cap.gpus[0].virtualization_mode = "passthrough"
    res = result(cap, "pcie.link-speed")
    assert (res.severity, res.confidence) == ("warn", "low")
    assert "VM" in res.summary


def test_slot_limited_gen_is_a_warning_with_the_lost_ceiling():
    cap = gen4()
    link = cap.gpus[0].pcie
    link.current_gen, link.max_gen, link.device_max_gen = 4, 4, 5
    res = result(cap, "pcie.link-speed")
    assert res.severity == "warn"
    assert "slot-limited" in res.summary
    assert "Gen4 x16 = 24 GB/s model vs Gen5 x16 = 48 GB/s model" in res.summary


def test_x8_slot_is_slot_limited_not_downtrained():
    cap = gen4()
    link = cap.gpus[0].pcie
    link.current_width, link.max_width, link.device_max_width = 8, 8, 16
    res = result(cap, "pcie.link-speed")
    assert res.severity == "warn"
    assert "x8 slot for an x16 GPU" in res.summary


def test_vm_host_max_below_device_max_while_link_runs_faster_is_info():
    # pcie-query/a100-sxm4-40gb-q-host-max-gen3: Max 4, Current 4, Device Max 4, Host Max 3.
    cap = gen4(hypervisor=True)
    cap.gpus[0].pcie.host_max_gen = 3
    res = result(cap, "pcie.link-speed")
    assert res.severity == "info"
    assert res.confidence == "low"
    assert "virtual root port" in res.summary


@pytest.mark.parametrize(("measured", "severity"), [(None, "info"), (11.5, "warn"), (24.0, "info")])
def test_vm_slot_cap_needs_a_measurement_to_be_a_warning(measured, severity):
    cap = gen4(hypervisor=True)
    link = cap.gpus[0].pcie
    link.current_gen, link.max_gen, link.device_max_gen, link.host_max_gen = 3, 3, 4, 3
    if measured is not None:
        cap.measurements.transfers.append(transfer(0, measured))
    res = result(cap, "pcie.link-speed")
    assert res.severity == severity, res.summary


def test_bare_metal_host_max_cap_is_a_warning():
    cap = gen4()
    link = cap.gpus[0].pcie
    link.current_gen, link.max_gen, link.device_max_gen, link.host_max_gen = 3, 4, 4, 3
    # current 3 < max 4 in P0 is downtrained; the host cap is reported as well
    findings = pcie_link_speed(Context(cap))
    assert {f.severity for f in findings} >= {"fail", "warn"}
    assert any("slot-limited" in f.summary for f in findings)


@pytest.mark.parametrize(("pstate", "severity"), [(0, "fail"), (8, "warn")])
def test_downtrained_switch_uplink_is_flagged_by_bus_id(pstate, severity):
    cap = gen4(2)
    for g in cap.gpus:
        g.path = switch_path(uplink_cur=3, uplink_max=4, root_max=4, dsp=str(g.index))
        g.pstate = pstate
        if pstate:
            g.pcie.current_gen = 1  # idle GPU link: info only
    res = result(cap, "pcie.link-speed")
    assert res.severity == severity
    assert "0000:10:00.0" in res.summary
    assert "GPU0, GPU1" in res.summary
    downtrained = [f for f in pcie_link_speed(Context(cap)) if "ceiling" in f.summary]
    assert len(downtrained) == 1  # the uplink is one link, reported once for both GPUs


def test_uplink_at_the_partners_ceiling_is_not_downtrained():
    # Root port supports Gen5, the switch only Gen4: the link at Gen4 is at its ceiling.
    cap = gen4()
    cap.gpus[0].path = switch_path(uplink_cur=4, uplink_max=4, root_max=5)
    assert result(cap, "pcie.link-speed").severity == "pass"


def test_unknown_roles_pair_ports_by_matching_current_speed():
    cap = gen4()
    cap.gpus[0].path = [
        hop("0000:11:00.0", None),
        hop("0000:10:00.0", None, cur=4, max_gen=4),
        hop("0000:00:01.0", None, cur=4, max_gen=5),
    ]
    assert result(cap, "pcie.link-speed").severity == "pass"


def test_root_port_slower_than_the_gpu_caps_it():
    cap = machine(1)  # Gen5 GPU
    cap.gpus[0].path = [hop("0000:00:01.0", "root_port", cur=5, max_gen=5)]
    cap.gpus[0].path.append(hop("0000:00:00.0", "root_port", cur=4, max_gen=4))
    res = result(cap, "pcie.link-speed")
    assert res.severity == "warn"
    assert "0000:00:00.0" in res.summary


def test_virtual_ports_in_a_vm_are_info_only():
    cap = gen4(hypervisor=True)
    cap.gpus[0].path = [
        hop("0000:00:02.0", "root_port", cur=1, width=1, max_gen=1, max_width=1),
        hop("0000:00:01.0", "root_port", cur=1, width=1, max_gen=4),
    ]
    res = result(cap, "pcie.link-speed")
    assert res.severity == "info"


def test_acs_srcvalid_only_does_not_affect_link_checks():
    cap = gen4()
    cap.gpus[0].path = switch_path()
    for h in cap.gpus[0].path:
        h.acs_capable = True
        h.acs = AcsControl.from_raw(0x01)
    assert result(cap, "pcie.link-speed").severity == "pass"
    assert result(cap, "pcie.errors").severity == "pass"


def test_partial_capture_says_what_was_not_judged():
    cap = gen4(3)
    for i in (1, 2):
        set_link(cap, i, None, None, None, None)
    res = result(cap, "pcie.link-speed")
    assert res.severity == "info"
    assert "GPU1, GPU2" in res.summary
    assert res.needs
    assert "nvidia-smi -q" in res.needs


def test_no_link_facts_is_a_skip_with_needs():
    cap = gen4(2, kind="import")
    for i in range(2):
        set_link(cap, i, None, None, None, None)
        cap.gpus[i].mark_unavailable("pcie", "not in the pasted output")
    res = result(cap, "pcie.link-speed")
    assert res.severity == "skip"
    assert res.needs
    assert "nvidia-smi -q" in res.needs
    assert "not in the pasted output" in res.summary


def test_no_gpu_is_a_skip():
    cap = machine(0)
    for cid in ("pcie.link-speed", "pcie.errors", "pcie.shared-uplink"):
        assert result(cap, cid).severity == "skip"


# ========================================================================== pcie.errors


def replay_cap(count: int, uptime_s: float | None = 3600.0, n: int = 1) -> Capture:
    cap = gen4(n)
    cap.host.uptime_s = uptime_s
    cap.gpus[0].replay_count = count
    return cap


def test_replay_limit_is_generation_scaled():
    assert config.replay_limit_per_minute(4, 16) == 16
    assert config.replay_limit_per_minute(5, 16) == 31


@pytest.mark.parametrize(
    ("count", "severity"),
    [
        (0, "pass"),
        (16 * 60, "info"),  # exactly at the Gen4 x16 limit over one hour: not above it
        (16 * 60 + 1, "warn"),  # one above
        (16 * 60 * config.REPLAY_FAIL_MULTIPLE, "warn"),
        (16 * 60 * config.REPLAY_FAIL_MULTIPLE + 1, "fail"),
    ],
)
def test_replay_rate_edges(count, severity):
    res = result(replay_cap(count), "pcie.errors")
    assert res.severity == severity, res.summary
    if severity in ("warn", "fail"):
        assert res.confidence == "low"  # an average since boot
        assert "average" in res.summary


def test_replays_without_a_time_base_are_info():
    res = result(replay_cap(50, uptime_s=None), "pcie.errors")
    assert res.severity == "info"
    assert "no time base" in res.summary


@pytest.mark.parametrize(
    ("count", "peers", "warned"),
    [
        (15, 0, True),  # pcie-query: GPU6 15 replays vs 0 on its peers
        (config.REPLAY_OUTLIER_MIN - 1, 0, False),  # below the minimum count
        (19, 2, False),  # below 10x the peers' median
        (20, 2, True),
    ],
)
def test_replay_outlier_among_identical_peers(count, peers, warned):
    cap = gen4(8)
    cap.host.uptime_s = 30 * 86400.0
    for g in cap.gpus:
        g.replay_count = peers
    cap.gpus[6].replay_count = count
    findings = pcie_errors(Context(cap))
    outliers = [f for f in findings if "identical" in f.summary and f.severity == "warn"]
    assert bool(outliers) == warned
    if warned:
        assert outliers[0].subjects == ["GPU6"]
        assert cap.gpus[6].bus_id in outliers[0].summary


def test_replays_on_one_gpu_whose_identical_peers_have_none_are_named_without_a_time_base():
    # No uptime: no rate and no absolute limit applies, but the peers are the reference.
    cap = gen4(4)
    cap.host.uptime_s = None
    for g in cap.gpus:
        g.replay_count = 0
    cap.gpus[2].replay_count = 3
    findings = pcie_errors(Context(cap))
    named = [f for f in findings if "identical" in f.summary]
    assert len(named) == 1 and named[0].subjects == ["GPU2"]
    assert named[0].severity == "info"
    assert "have none" in named[0].summary and cap.gpus[2].bus_id in named[0].summary
    factor = next(e for e in named[0].evidence if e.label == "outlier factor")
    assert factor.value == "peers have none"  # never "10x" of a median of 0


def test_different_models_are_not_peers():
    cap = gen4(2)
    cap.gpus[1].name = "NVIDIA L4"
    cap.gpus[0].replay_count = 15
    findings = pcie_errors(Context(cap))
    assert not any("identical" in f.summary for f in findings)


def test_rollover_is_at_least_a_warning():
    cap = replay_cap(0)
    cap.gpus[0].replay_rollover_count = 1
    res = result(cap, "pcie.errors")
    assert res.severity == "warn"
    assert "rolled over" in res.summary


def test_fatal_aer_on_the_gpu_fails():
    cap = gen4()
    cap.gpus[0].aer_fatal = 1
    res = result(cap, "pcie.errors")
    assert res.severity == "fail"
    assert "GPU0" in res.subjects


def test_nonfatal_aer_on_an_upstream_port_fails_naming_it():
    cap = gen4(2)
    for g in cap.gpus:
        g.path = switch_path(dsp=str(g.index))
    cap.gpus[0].path[1].aer_nonfatal = 2
    cap.gpus[1].path[1].aer_nonfatal = 2  # the same port seen from both GPUs
    findings = [f for f in pcie_errors(Context(cap)) if f.severity == "fail"]
    assert len(findings) == 1
    assert "0000:10:00.0" in findings[0].summary
    assert set(findings[0].subjects) >= {"GPU0", "GPU1"}


@pytest.mark.parametrize(
    ("per_min", "gen", "severity"),
    [(20, 4, "warn"), (20, 5, "info"), (10, 4, "info"), (40, 5, "warn")],
)
def test_correctable_aer_at_the_link_partner(per_min, gen, severity):
    # Errors may show only at the link partner: the GPU's own counters are clean.
    cap = gen4()
    set_link(cap, 0, gen, 16, max_gen=gen)
    cap.host.uptime_s = 600.0
    cap.gpus[0].aer_correctable = 0
    cap.gpus[0].path = [
        hop("0000:00:01.0", "root_port", cur=gen, max_gen=gen, aer_correctable=per_min * 10)
    ]
    res = result(cap, "pcie.errors")
    assert res.severity == severity, res.summary
    assert "link partner" in res.summary


def test_zero_aer_counters_on_a_port_alone_are_judged_clean():
    # No replay counter and no GPU AER counter: a port's zero counters are still counters.
    cap = gen4(2)
    for g in cap.gpus:
        g.replay_count = None
        g.path = switch_path(dsp=str(g.index))
    cap.gpus[0].path[1].aer_correctable = 0
    findings = pcie_errors(Context(cap))
    assert [f.severity for f in findings] == ["info", "pass"]  # replays unknown, AER clean
    assert findings[1].summary.startswith("no AER errors on the GPUs or their ports")


@pytest.mark.parametrize(("first_gen", "severity"), [(5, "info"), (4, "warn")])
def test_aer_on_a_port_without_its_own_speed_is_scaled_by_the_first_gpu_below_it(
    first_gen, severity
):
    # The port reports no link of its own: the limit comes from the first GPU whose path holds
    # it (GPU0 here), not from the others below it.
    cap = gen4(2)
    cap.host.uptime_s = 600.0
    set_link(cap, 0, first_gen, 16, max_gen=first_gen)
    set_link(cap, 1, 9 - first_gen, 16, max_gen=9 - first_gen)
    for g in cap.gpus:
        g.path = switch_path(dsp=str(g.index))
        g.path[1].current_gen = g.path[1].current_width = None
    cap.gpus[0].path[1].aer_correctable = 200  # 20/min (the port as the first path shows it)
    findings = [f for f in pcie_errors(Context(cap)) if "0000:10:00.0" in f.summary]
    assert [f.severity for f in findings] == [severity]
    assert "carrying GPU0, GPU1" in findings[0].summary


def test_unknown_counters_are_skipped_not_passed():
    cap = gen4(2, kind="import")
    cap.gpus[0].name = cap.gpus[1].name = "NVIDIA GeForce RTX 4090"
    for g in cap.gpus:
        g.replay_count = None
        g.mark_unavailable("replay_count", "NVML: NOT_SUPPORTED")
    res = result(cap, "pcie.errors")
    assert res.severity == "skip"
    assert "NOT_SUPPORTED" in res.summary
    assert res.needs
    assert "pcidoc check --only pcie.errors" in res.needs


def test_some_counters_unknown_is_info_not_pass():
    cap = gen4(2)
    cap.gpus[1].replay_count = None
    cap.gpus[1].mark_unavailable("replay_count", "NVML: NOT_SUPPORTED")
    res = result(cap, "pcie.errors")
    assert res.severity == "info"
    assert "GPU1" in res.summary


# =================================================================== pcie.shared-uplink


def shared(uplink_gen: int = 4, n: int = 2) -> Capture:
    cap = gen4(n, link="PIX")
    for g in cap.gpus:
        g.path = switch_path(
            uplink_cur=uplink_gen, uplink_max=uplink_gen, root_max=uplink_gen, dsp=str(g.index)
        )
    return cap


def test_two_gen4_gpus_on_a_gen4_uplink_are_oversubscribed():
    res = result(shared(4), "pcie.shared-uplink")
    assert res.severity == "info"
    assert "0000:10:00.0" in res.summary
    assert "about 12 GB/s each" in res.summary
    assert "2.0x oversubscribed" in res.summary


def test_a_gen5_uplink_covers_two_gen4_gpus():
    res = result(shared(5), "pcie.shared-uplink")
    assert res.severity == "pass"


@pytest.mark.parametrize(("together", "severity"), [(12.0, "warn"), (20.0, "pass")])
def test_measured_concurrent_h2d_wins_over_arithmetic(together, severity):
    cap = shared(4)
    for i in range(2):
        cap.measurements.transfers.append(transfer(i, 25.0))
        cap.measurements.transfers.append(transfer(i, together, context="concurrent GPU0,GPU1"))
    res = result(cap, "pcie.shared-uplink")
    assert res.severity == severity
    assert res.confidence == "high"


def test_gpus_on_their_own_root_ports_share_nothing():
    cap = gen4(2, link="NODE")
    for g in cap.gpus:
        g.path = [hop(f"0000:0{g.index}:01.0", "root_port")]
    res = result(cap, "pcie.shared-uplink")
    assert res.severity == "pass"
    assert "no uplink is shared" in res.summary


def test_nested_switches_report_each_shared_uplink():
    cap = gen4(3)
    inner = [hop("0000:30:00.0", "switch_upstream"), hop("0000:20:01.0", "switch_downstream")]
    outer = [hop("0000:20:00.0", "switch_upstream"), hop("0000:00:01.0", "root_port")]
    cap.gpus[0].path = [hop("0000:31:00.0", "switch_downstream"), *inner, *outer]
    cap.gpus[1].path = [hop("0000:31:01.0", "switch_downstream"), *inner, *outer]
    cap.gpus[2].path = [hop("0000:20:02.0", "switch_downstream"), *outer]
    findings = pcie_shared_uplink(Context(cap))
    buses = {s for f in findings for s in f.subjects if s.startswith("0000:")}
    assert buses == {"0000:30:00.0", "0000:20:00.0"}


def test_long_gpu_lists_are_written_as_ranges():
    # The synthetic 72-GPU sample listed GPU0, GPU1, ... GPU71 in one summary line.
    res = result(gen4(8), "pcie.link-speed")
    assert res.severity == "pass"
    assert res.summary.startswith("GPUs 0-7 at their max link")


def test_many_identical_switches_are_reported_as_one_finding():
    # The synthetic 72-GPU sample: 36 switches, two Gen5-class GPUs behind each; 8 GPUs here.
    cap = gen4(8, link="PIX")
    for g in cap.gpus:
        pair = g.index // 2
        g.path = switch_path(
            dsp=f"0000:{0x11 + pair:02x}:0{g.index % 2}.0",
            usp_bus=f"0000:{0x40 + pair:02x}:00.0",
            root_bus=f"0000:00:0{pair}.0",
        )
    findings = pcie_shared_uplink(Context(cap))
    uplinks = [f for f in findings if "uplink" in f.summary]
    assert len(uplinks) == 1
    assert uplinks[0].summary.startswith("4 uplinks alike, e.g. GPU0, GPU1 share uplink")
    assert {"0000:40:00.0", "0000:43:00.0", "GPU7"} <= set(uplinks[0].subjects)
    assert any(e.label == "uplinks like this one" for e in uplinks[0].evidence)


def test_folded_uplinks_keep_the_first_ones_evidence_and_separate_ones_their_own():
    # The fold builds evidence only for the findings it keeps: it must be the first uplink's,
    # and an uplink that stays separate (fewer than four alike) keeps its own.
    cap = gen4(10, link="PIX")
    for g in cap.gpus:
        pair = g.index // 2
        g.path = switch_path(
            uplink_cur=5 if pair < 4 else 4,  # four alike (Gen5 uplinks), one on its own
            uplink_max=5 if pair < 4 else 4,
            dsp=f"0000:{0x11 + pair:02x}:0{g.index % 2}.0",
            usp_bus=f"0000:{0x40 + pair:02x}:00.0",
            root_bus=f"0000:00:0{pair}.0",
        )
    findings = pcie_shared_uplink(Context(cap))
    folded = next(f for f in findings if "uplinks alike" in f.summary)
    alone = next(f for f in findings if f.summary.startswith("GPU8, GPU9 share uplink"))
    labels = [
        "uplink port",
        "uplink link",
        "uplink model",
        "GPUs behind it",
        "their combined link model",
    ]
    assert [e.label for e in folded.evidence] == [*labels, "uplinks like this one"]
    assert {e.subject for e in folded.evidence[:5]} == {"0000:40:00.0"}
    assert folded.evidence[-1].value == "0000:40:00.0, 0000:41:00.0, 0000:42:00.0, 0000:43:00.0"
    assert [e.label for e in alone.evidence] == [*labels, "oversubscription"]
    assert {e.subject for e in alone.evidence} == {"0000:44:00.0"}
    assert alone.evidence[1].value == "Gen4 x16"


def test_concurrent_h2d_without_solo_rates_is_judged_by_the_model_and_listed():
    cap = shared(4)
    for i in range(2):
        cap.measurements.transfers.append(transfer(i, 11.0, context="concurrent GPU0,GPU1"))
    findings = pcie_shared_uplink(Context(cap))
    uplink = next(f for f in findings if "share uplink" in f.summary)
    assert "2.0x oversubscribed" in uplink.summary
    assert [(e.label, e.value, e.subject) for e in uplink.evidence[5:]] == [
        ("concurrent pinned H2D", 11.0, "GPU0"),
        ("concurrent pinned H2D", 11.0, "GPU1"),
        ("oversubscription", 2.0, "0000:10:00.0"),
    ]


@pytest.mark.parametrize(
    ("read", "cuda", "expected"),
    [
        ("NS", None, "cannot use P2P (NS)"),  # NVML refuses
        ("OK", False, "cannot use P2P (OK)"),  # NVML grants, CUDA refuses
        ("OK", None, None),  # granted: nothing to say
        ("U", None, None),
    ],
)
def test_gpus_behind_one_switch_without_p2p_are_named(read, cuda, expected):
    cap = shared(4)
    cap.p2p.matrices["read"] = [["X", read], [read, "X"]]
    if cuda is not None:
        cap.p2p.can_access_peer = [[None, cuda], [cuda, None]]
    trap = [f for f in pcie_shared_uplink(Context(cap)) if "behind one PCIe switch" in f.summary]
    if expected is None:
        assert trap == []
    else:
        assert len(trap) == 1
        assert trap[0].summary.startswith(
            f"GPU0-GPU1 sit behind one PCIe switch (PIX) but {expected}"
        )


def test_a_few_identical_switches_stay_separate():
    cap = gen4(4, link="PIX")
    for g in cap.gpus:
        pair = g.index // 2
        g.path = switch_path(
            dsp=f"0000:{0x11 + pair:02x}:0{g.index % 2}.0",
            usp_bus=f"0000:{0x40 + pair:02x}:00.0",
            root_bus=f"0000:00:0{pair}.0",
        )
    findings = pcie_shared_uplink(Context(cap))
    assert len([f for f in findings if "share uplink" in f.summary]) == 2


def test_topology_only_pix_pairs_are_low_confidence_info():
    cap = gen4(4, kind="import", pairs={(0, 1): "PIX", (2, 3): "PXB"}, link="SYS")
    res = result(cap, "pcie.shared-uplink")
    assert res.severity == "info"
    assert res.confidence == "low"
    assert {"GPU0", "GPU1", "GPU2", "GPU3"} <= set(res.subjects)


def test_topology_only_without_switch_pairs_passes_with_medium_confidence():
    cap = gen4(2, kind="import", link="SYS")
    res = result(cap, "pcie.shared-uplink")
    assert (res.severity, res.confidence) == ("pass", "medium")


def test_nvlink_only_matrix_hides_the_switches():
    res = result(gen4(4, kind="import", link="NV12"), "pcie.shared-uplink")
    assert res.severity == "skip"
    assert res.needs


def test_no_path_and_no_matrix_is_a_skip():
    cap = gen4(2, kind="import")
    cap.topology.labels, cap.topology.links = [], []
    assert result(cap, "pcie.shared-uplink").severity == "skip"


def test_one_gpu_shares_nothing():
    r = result(gen4(1), "pcie.shared-uplink")
    assert r.severity == "skip" and r.summary.startswith("not applicable")


@pytest.mark.parametrize(("code", "trap"), [("GNS", True), ("NS", True), ("OK", False)])
def test_switch_pair_without_p2p_bounces_through_the_uplink(code, trap):
    # The GeForce trap (NVIDIA/nccl#1309): p2p-bandwidth/rtx2080ti-x2-pix-no-p2p.
    cap = machine(2, link="PIX", gpu_fields={"name": "NVIDIA GeForce RTX 2080 Ti", "gen": 3})
    cap.p2p.matrices["read"] = [["X", code], [code, "X"]]
    findings = pcie_shared_uplink(Context(cap))
    hits = [f for f in findings if "nccl#1309" in " ".join(f.remediation)]
    assert bool(hits) == trap
    if trap:
        assert hits[0].subjects == ["GPU0-GPU1"]
        assert hits[0].severity == "info"


# ========================================================================== robustness


def test_hostile_inputs_do_not_crash_the_checks():
    cap = gen4(3)
    cap.topology.links = [["X", "PIX"], ["PIX"]]  # ragged, shorter than the labels
    cap.gpus[0].path = [PcieHop(bus_id="0000:00:01.0")]  # every field unknown
    cap.gpus[1].pcie.max_gen = 9  # a generation we have no model for
    cap.gpus[1].pcie.current_gen = 8
    cap.gpus[2].pcie.current_width = 0
    cap.gpus[2].replay_count = 5
    cap.host.uptime_s = -1.0
    cap.measurements.transfers.append(transfer(7, 3.0, gen=3, context="concurrent"))
    report = run(cap, ReportSource(kind="synthetic"), only=["pcie"], generated_at=STAMP)
    assert [c.id for c in report.checks] == [
        "pcie.link-speed",
        "pcie.errors",
        "pcie.shared-uplink",
        "pcie.link-flap",
    ]
    assert all(c.severity != "error" for c in report.checks), [
        (c.id, c.summary) for c in report.checks
    ]


def test_capture_of_one_gpu_out_of_eight_never_passes_the_comparisons():
    # pcie-query/a100-sxm4-40gb-q-host-max-gen3: `nvidia-smi -i 0 -q` of an 8-GPU machine.
    cap = gen4(1, kind="import")
    cap.unavailable["gpus"] = "nvidia-smi -q reports 8 attached GPUs; the text describes only GPU0"
    assert result(cap, "pcie.link-speed").severity == "info"
    assert result(cap, "pcie.errors").severity == "info"
    res = result(cap, "pcie.shared-uplink")
    assert res.severity == "skip"
    assert "8 attached GPUs" in res.summary


def test_flattened_vm_topology_hides_switches():
    # topo/a10x4-all-sys-vm-2nic: all pairs SYS, all GPUs on NUMA 0, nothing else known.
    cap = gen4(4, kind="import", link="SYS", hypervisor=None)
    res = result(cap, "pcie.shared-uplink")
    assert (res.severity, res.confidence) == ("info", "low")
    assert "flattened" in res.summary


_maybe_gen = st.one_of(st.none(), st.integers(min_value=0, max_value=8))
_maybe_width = st.one_of(st.none(), st.sampled_from([0, 1, 2, 4, 8, 16, 32]))
_maybe_count = st.one_of(st.none(), st.integers(min_value=0, max_value=10**9))


@settings(max_examples=40, deadline=None)
@given(
    links=st.lists(
        st.tuples(_maybe_gen, _maybe_width, _maybe_gen, _maybe_width), min_size=1, max_size=4
    ),
    pstate=st.one_of(st.none(), st.integers(min_value=0, max_value=15)),
    replays=_maybe_count,
    aer=_maybe_count,
    uptime=st.one_of(st.none(), st.floats(min_value=-10, max_value=1e9)),
    hop_gen=_maybe_gen,
    vm=st.one_of(st.none(), st.booleans()),
)
def test_random_link_facts_never_crash(links, pstate, replays, aer, uptime, hop_gen, vm):
    cap = gen4(len(links), hypervisor=vm)
    cap.host.uptime_s = uptime
    for g, (cur, width, top, top_width) in zip(cap.gpus, links, strict=True):
        g.pcie.current_gen, g.pcie.current_width = cur, width
        g.pcie.max_gen, g.pcie.max_width, g.pcie.host_max_gen = top, top_width, hop_gen
        g.pstate, g.replay_count, g.aer_correctable = pstate, replays, aer
        g.path = switch_path(uplink_cur=hop_gen or 1, uplink_max=4, root_max=hop_gen or 4)
    report = run(cap, ReportSource(kind="synthetic"), only=["pcie"], generated_at=STAMP)
    assert all(c.severity != "error" for c in report.checks), [
        (c.id, c.summary) for c in report.checks
    ]


@given(st.lists(st.one_of(st.none(), st.integers(-3, 40)), max_size=4))
def test_the_smallest_known_value_is_min_over_the_known_ones(values):
    from pcidoc.doctor.checks.pcie._shared import _min_known

    known = [v for v in values if v is not None]
    assert _min_known(*values) == (min(known) if known else None)
