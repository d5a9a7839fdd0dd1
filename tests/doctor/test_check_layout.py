"""The doctor's shape: one module per check id, named after the id (docs/architecture.md)."""

from __future__ import annotations

import pkgutil

import pcidoc.doctor.checks as checks_package
from pcidoc.doctor.registry import CHECK_IDS, load_checks


def module_suffix(check_id: str) -> str:
    """``p2p.acs-iommu`` -> ``p2p.acs_iommu``."""
    return check_id.replace("-", "_")


def test_every_check_id_lives_in_the_module_named_after_it() -> None:
    registry = load_checks()
    assert set(registry) == set(CHECK_IDS)
    misplaced = {
        cid: registry[cid].function.__module__
        for cid in CHECK_IDS
        if not registry[cid].function.__module__.endswith("." + module_suffix(cid))
    }
    assert not misplaced, f"checks registered outside their own module: {misplaced}"


def test_no_module_registers_two_checks() -> None:
    registry = load_checks()
    modules = [spec.function.__module__ for spec in registry.values()]
    assert len(modules) == len(set(modules))


def test_every_check_module_holds_a_check() -> None:
    """A module under checks/ is a topic package, a helper (``_name``) or exactly one check."""
    registered = {spec.function.__module__ for spec in load_checks().values()}
    prefix = checks_package.__name__ + "."
    orphans = [
        info.name
        for info in pkgutil.walk_packages(checks_package.__path__, prefix)
        if not info.ispkg
        and not info.name.rsplit(".", 1)[1].startswith("_")
        and info.name not in registered
    ]
    assert not orphans, f"check modules that register no check: {orphans}"
