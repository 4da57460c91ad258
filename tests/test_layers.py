"""The import layers of pyproject's [tool.importlinter] hold on the tree, `lint-imports`
fails on a copy of the package given one import that points up a floor (or into
``streamx.base``) or closes a cycle between siblings, and docs/concepts/layers.md draws the
contract as it is."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")


def _lint(source_root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with pyproject.toml in `cwd`, on the package under `source_root`."""
    env = {**os.environ, "PYTHONPATH": str(source_root)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True
    )


def _copy(tmp_path: Path) -> Path:
    """A copy of python/streamx and pyproject.toml under `tmp_path`; the package's root."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd")
    shutil.copytree(ROOT / "python" / "streamx", src / "streamx", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return src


def test_the_tree_keeps_its_layers() -> None:
    out = _lint(ROOT / "python", ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 3 kept, 0 broken." in out.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "storage/back_arrow.py",
            "import streamx.torch.dataloader\n",
            "streamx.storage is not allowed to import streamx.torch",
        ),
        (
            "order/back_arrow.py",
            "from streamx.dataset import streaming\n",
            "streamx.order is not allowed to import streamx.dataset",
        ),
        (
            "dataset/back_arrow.py",
            "from streamx.base import util\n",
            "streamx.dataset.back_arrow -> streamx.base.util",
        ),
    ],
)
def test_one_import_up_a_floor_fails(tmp_path: Path, module: str, line: str, broken: str) -> None:
    src = _copy(tmp_path)
    clean = _lint(src, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (src / "streamx" / module).write_text(f'"""A deliberate back-arrow."""\n\n{line}')
    out = _lint(src, tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    # An arrow up a floor usually closes a cycle too: the acyclic contract may break with it.
    assert "0 broken." not in out.stdout
    assert broken in out.stdout


def test_a_cycle_between_siblings_fails(tmp_path: Path) -> None:
    """``shard_cache`` imports ``room``; ``room`` importing ``shard_cache`` back closes a
    cycle inside one floor, which the layers contract alone cannot see."""
    src = _copy(tmp_path)
    room = src / "streamx" / "cache" / "room.py"
    room.write_text(room.read_text() + "\nfrom streamx.cache import shard_cache  # noqa\n")
    out = _lint(src, tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 broken." in out.stdout
    assert "No cycles are allowed in streamx.cache." in out.stdout


def test_the_docs_draw_the_contract() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "layers_diagram.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout
