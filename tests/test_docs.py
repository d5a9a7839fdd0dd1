"""The documentation covers the contract: every check id, every command."""

from __future__ import annotations

from pathlib import Path

from pcidoc.cli import COMMANDS
from pcidoc.doctor.registry import CHECK_IDS, load_checks

ROOT = Path(__file__).resolve().parent.parent


def test_every_check_has_a_section_in_checks_md() -> None:
    text = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    for check_id in CHECK_IDS:
        assert f'<a id="{check_id}"></a>' in text, check_id
        assert f"## `{check_id}`" in text, check_id


def test_docs_urls_point_at_existing_anchors() -> None:
    text = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    for spec in load_checks().values():
        path, _, anchor = spec.docs_url.partition("#")
        assert (ROOT / path).is_file()
        assert f'<a id="{anchor}"></a>' in text


def test_usage_documents_every_command() -> None:
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"pcidoc {command.name}" in text, command.name


def test_readme_links_resolve() -> None:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_no_page_states_a_stale_number_of_checks() -> None:
    """ "Runs the 20 checks" outlived the catalogue (30): a page that counts the catalogue must
    say its current size (reports.md's examples count a sample report, not the catalogue)."""
    import re

    pages = ["README.md", "docs/usage.md", "docs/checks.md", "docs/tui.md", "docs/fleet.md"]
    for page in pages:
        text = (ROOT / page).read_text(encoding="utf-8")
        for match in re.finditer(r"\b(?:the|all|every one of the) (\d+) checks\b", text):
            assert int(match.group(1)) == len(CHECK_IDS), (page, match.group(0))
