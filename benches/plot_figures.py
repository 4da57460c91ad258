"""Draws the ratio columns of the tables recorded in ``benches/README.md`` as bar charts.

The README is the record of every measured figure (with the command that produced it), so the
documentation's plots are drawn from it rather than from a second copy of the numbers.

Usage:
    python benches/plot_figures.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

README = Path(__file__).with_name("README.md")
# Columns that hold "streamx over a peer" ratios, and the label each gets in a plot.
RATIO_COLUMNS = {
    "ratio": "vs mosaic",
    "vs LitData": "vs LitData",
    "vs WebDataset": "vs WebDataset",
    "vs mosaic": "vs mosaic",
}


@dataclass(frozen=True)
class Table:
    section: str
    header: list[str]
    rows: list[list[str]]


def tables(text: str) -> list[Table]:
    """Every Markdown table of ``text`` with the ``##`` heading it sits under."""
    found: list[Table] = []
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            found.append(Table(section, header, rows))
            continue
        i += 1
    return found


def title(section: str) -> str:
    """A section heading as a reader's title: our tracker's issue numbers left out
    (``"Format I/O (issue 2)"`` -> ``"Format I/O"``)."""
    return re.sub(r"\s*\([^()]*\bissue\b[^()]*\)", "", section, flags=re.IGNORECASE).strip()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _number(cell: str) -> float | None:
    match = re.match(r"^\**([0-9][0-9,]*\.?[0-9]*)x?\**$", cell.replace(" ", ""))
    return float(match.group(1).replace(",", "")) if match else None


def plot(table: Table, path: Path) -> bool:
    """Draws one table's ratio columns; False when it has none with numbers."""
    columns = [
        (i, RATIO_COLUMNS[name]) for i, name in enumerate(table.header) if name in RATIO_COLUMNS
    ]
    if not columns:
        return False
    label_columns = [
        i
        for i, name in enumerate(table.header)
        if name in ("dataset", "op", "server", "workload", "case")
    ]
    labels = [" ".join(row[i] for i in label_columns) or row[0] for row in table.rows]
    series = []
    for index, name in columns:
        values = [_number(row[index]) if index < len(row) else None for row in table.rows]
        if any(v is not None for v in values):
            series.append((name, [v or 0.0 for v in values]))
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.5))
    height = 0.8 / len(series)
    for k, (name, values) in enumerate(series):
        ax.barh(
            [y + k * height for y in range(len(labels))], values, height, label=f"streamx {name}"
        )
    ax.set_yticks([y + height * (len(series) - 1) / 2 for y in range(len(labels))], labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("speed-up (x, log scale); 1 = as fast as the peer")
    ax.set_title(title(table.section))
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    for table in tables(README.read_text()):
        slug = re.sub(r"[^a-z0-9]+", "-", title(table.section).lower()).strip("-")[:40]
        seen[slug] = seen.get(slug, 0) + 1
        path = args.out / f"bench-{slug}-{seen[slug]}.png"
        if plot(table, path):
            print(path)


if __name__ == "__main__":
    main()
