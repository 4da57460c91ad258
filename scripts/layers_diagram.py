"""Draws the Python package's floors from pyproject's import-linter `layers` contract into
docs/concepts/layers.md, between the BEGIN/END markers.

    python scripts/layers_diagram.py          # rewrite the diagram
    python scripts/layers_diagram.py --check  # exit 1 if the page is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concepts" / "layers.md"
BEGIN, END = "<!-- BEGIN layers (scripts/layers_diagram.py) -->", "<!-- END layers -->"


def layers(pyproject: Path = ROOT / "pyproject.toml") -> list[list[str]]:
    """The floors, top first; each floor's packages, in the contract's order."""
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in floor.split("|")] for floor in contract["layers"]]


def diagram(floors: list[list[str]]) -> str:
    """A text drawing: one box per floor, arrows pointing down (the allowed direction)."""
    rows = ["  ".join(f"streamx.{name}" for name in floor) for floor in floors]
    width = max(len(row) for row in rows) + 4
    lines: list[str] = []
    for i, row in enumerate(rows):
        lines += ["+" + "-" * (width - 2) + "+", "| " + row.center(width - 4) + " |"]
        lines.append("+" + "-" * (width - 2) + "+")
        if i < len(rows) - 1:
            lines.append("v".center(width).rstrip())
    return "```text\n" + "\n".join(lines) + "\n```"


def render(page: str, floors: list[list[str]]) -> str:
    """`page` with the text between the markers replaced by the diagram."""
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{diagram(floors)}\n{END}{tail}"


def main(argv: list[str]) -> int:
    page = PAGE.read_text()
    new = render(page, layers())
    if "--check" in argv:
        if new != page:
            print(f"{PAGE} is out of date: run python scripts/layers_diagram.py")
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
