"""The Rust crates' modules form no import cycle (scripts/rust_module_cycles.py, also run by
``make lint``), and the check does fail on a copy given one arrow back."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "rust_module_cycles.py"
CRATES = [ROOT / "rust" / "streamx-core" / "src", ROOT / "rust" / "streamx-py" / "src"]


def _check(*sources: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, sources)], capture_output=True, text=True
    )


def test_the_crates_have_no_module_cycles() -> None:
    out = _check(*CRATES)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("no module cycles in ")


def test_one_arrow_back_is_a_cycle(tmp_path: Path) -> None:
    """The ledger reads the clock; the clock naming the ledger closes a cycle."""
    src = tmp_path / "src"
    shutil.copytree(CRATES[0], src)
    clock = src / "cache" / "clock.rs"
    clock.write_text(clock.read_text() + "\nuse super::ledger::Ledger;\n")
    out = _check(src)
    assert out.returncode == 1, out.stdout
    assert "cycle between crate::cache::clock, " in out.stdout
    assert "crate::cache::clock -> crate::cache::ledger" in out.stdout
