"""The built wheel installs into a fresh virtual environment (no system packages) and works."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = """
import streamx, tempfile, os
d = tempfile.mkdtemp()
with streamx.MDSWriter(out=d, columns={"id": "int", "text": "str"}, compression="zstd") as w:
    for i in range(100):
        w.write({"id": i, "text": str(i)})
ds = streamx.StreamingDataset(local=d, batch_size=10)
assert [s["id"] for s in ds] == list(range(100))
assert ds[42]["text"] == "42"
print("wheel ok", streamx.__version__)
"""


@pytest.mark.slow
def test_wheel_installs_in_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--release", "-q", "-o", str(dist)],
        cwd=ROOT,
        check=True,
        timeout=1200,
    )
    wheel = next(dist.glob("streamx-*.whl"))
    assert "abi3" in wheel.name  # one wheel serves CPython 3.10 to 3.13
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900)
    result = subprocess.run([python, "-c", SMOKE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "wheel ok" in result.stdout
