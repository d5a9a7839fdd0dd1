"""``setpci`` reads of the ACS Control register (synthetic lines in the shapes setpci prints:
one word per line, or ``setpci -v``'s ``<bus id> @<offset> = <word>``)."""

from __future__ import annotations

from pcidoc.collect.importers import import_texts
from pcidoc.collect.importers.setpci import acs_flags
from pcidoc.errors import PcidocError


def _devices(text: str):
    result = import_texts([("paste.txt", text)])
    return [d for d in result.capture.evidence.lspci if d.acs_ctl], result


def _refused(text: str) -> bool:
    try:
        import_texts([("paste.txt", text)])
    except PcidocError as exc:
        return "no supported output recognised" in str(exc)
    return False


def test_the_flags_are_spelled_as_lspci_spells_them() -> None:
    assert acs_flags(0x001D) == (
        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
    )
    assert acs_flags(0) == (
        "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
    )


def test_a_loop_over_switch_ports_reading_a_raw_offset_under_an_acs_question() -> None:
    text = (
        "The ACS register values after a fresh boot:\n"
        "```\n"
        "$ for p in $(lspci | grep -i plx | awk '{print $1}'); do sudo setpci -s ${p} f2a.w; done\n"
        "[sudo] password for me:\n"
        "0000\n001d\n0011\n0000\n"
        "```\n"
    )
    devices, _ = _devices(text)
    assert [d.acs_redirect for d in devices] == [False, True, False, False]
    assert all(d.bus_id is None for d in devices)  # a variable selector names no device


def test_a_named_register_with_one_device_keeps_its_bus_id() -> None:
    devices, _ = _devices("# setpci -s 0000:05:08.0 ECAP_ACS+0x6.w\n0004\n")
    assert len(devices) == 1
    assert devices[0].bus_id == "0000:05:08.0" and devices[0].acs_redirect is True


def test_verbose_lines_carry_their_own_bus_ids() -> None:
    text = (
        "$ sudo setpci -v -d 10b5: ECAP_ACS+6.w\n"
        "0000:03:08.0 @f2a = 001d\n"
        "0000:03:10.0 @f2a = 0000\n"
    )
    devices, result = _devices(text)
    assert [(d.bus_id, d.acs_redirect) for d in devices] == [
        ("0000:03:08.0", True),
        ("0000:03:10.0", False),
    ]
    assert "setpci-acs" in result.capture.origin.sources[0].formats


def test_writes_and_raw_offsets_with_no_word_of_acs_are_not_readings() -> None:
    assert _refused("$ sudo setpci -s 05:00.0 ECAP_ACS+6.w=0000\n0000\n")
    assert _refused("$ sudo setpci -s 05:00.0 f2a.w\n001d\n")
    # A value line with no read before it is no value either.
    assert _refused("ACS control on my switch\n001d\n")
