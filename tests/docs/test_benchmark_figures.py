"""The benchmark figures a reader sees carry no tracker issue numbers: neither their titles
(drawn by benches/plot_figures.py) nor their file names in docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _plot_figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plot_figures", ROOT / "benches/plot_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plot_figures"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_titles_leave_out_issue_numbers() -> None:
    figures = _plot_figures()
    assert figures.title("Format I/O (issue 2)") == "Format I/O"
    assert figures.title("Import time (Python-layer issue)") == "Import time"
    assert figures.title("Object stores on a quiet machine (issue 12, second pass)") == (
        "Object stores on a quiet machine"
    )
    for table in figures.tables((ROOT / "benches/README.md").read_text(encoding="utf-8")):
        assert not re.search(r"\bissue\b", figures.title(table.section), re.IGNORECASE)


def test_docs_show_figures_without_issue_numbers() -> None:
    text = (ROOT / "docs/benchmarks.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", text)
    assert images
    for image in images:
        assert "issue" not in image, image
        assert (ROOT / "docs" / image).is_file(), image
    assert not re.search(r"\bissue\b", text, re.IGNORECASE)
