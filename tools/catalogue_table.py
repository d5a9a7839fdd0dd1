"""Write (or check) the entry table of docs/catalogue.md from the failure catalogue.

python tools/catalogue_table.py          # rewrite the table between its markers
python tools/catalogue_table.py --check  # exit 1 when the page is stale (the tests run it)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pcidoc.catalogue import catalogue  # noqa: E402

PAGE = ROOT / "docs" / "catalogue.md"
BEGIN = "<!-- catalogue-table:begin (tools/catalogue_table.py writes this part) -->"
END = "<!-- catalogue-table:end -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def table() -> str:
    """The Markdown table of every entry, by family in catalogue order."""
    cat = catalogue()
    rows = [
        "| id | family | matches | severity | reported by | source |",
        "|---|---|---|---|---|---|",
    ]
    for entry in sorted(cat.entries, key=lambda e: (e.family, e.id)):
        matched = "; ".join(f"`{m}`" for m in entry.markers[:3])
        if entry.reader and entry.reader_shape:
            matched += f" ({entry.reader_shape} lines read by the {entry.reader} reader)"
        elif entry.reader:
            matched += f" (read by the {entry.reader} reader)"
        rows.append(
            f"| `{entry.id}` | {entry.family} | {_cell(matched)} | {entry.severity} | "
            f"`{entry.check}` | {_cell(entry.source)} |"
        )
    tables = ", ".join(
        f"`{name}` ({len(rows_)} rows)" for name, rows_ in sorted(cat.tables.items())
    )
    return "\n".join(rows) + f"\n\nLookup tables: {tables}.\n"


def render(page: str) -> str:
    """``page`` with the table between the markers replaced."""
    start = page.index(BEGIN) + len(BEGIN)
    end = page.index(END)
    return page[:start] + "\n\n" + table() + "\n" + page[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page)
    if args.check:
        if fresh != page:
            print(f"{PAGE}: the entry table is stale; run python tools/catalogue_table.py")
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
