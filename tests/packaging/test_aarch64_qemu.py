"""The aarch64 wheel, built with Debian's arm64 std, runs: Debian's arm64 CPython under qemu."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from release_env import ROOT, SMOKE, Artifacts, aarch64_wheel, clean_env, project_version, run

pytestmark = [pytest.mark.release, pytest.mark.aarch64]

# qemu emulates every instruction; the dependencies come from the package index.
QEMU_TEST_TIMEOUT_S = 900


@pytest.mark.timeout(QEMU_TEST_TIMEOUT_S)
def test_aarch64_wheel_runs_under_qemu(artifacts: Artifacts, tmp_path: Path) -> None:
    env = clean_env()
    script = ROOT / "scripts" / "release" / "aarch64-python.sh"
    root = Path(run([script], cwd=ROOT, env=env, timeout=600).strip().splitlines()[-1])
    site = tmp_path / "site"
    # pip resolves for the arm64 interpreter: aarch64 wheels of numpy, Pillow and the rest.
    platforms = ["manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"]
    run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", site, "--python-version", "3.11",
         "--implementation", "cp", "--only-binary=:all:",
         *(arg for p in platforms for arg in ("--platform", p)), aarch64_wheel(artifacts)],
        cwd=tmp_path, env=env, timeout=600,
    )  # fmt: skip
    python: list[str | Path] = [
        "qemu-aarch64-static",
        "-L",
        root,
        root / "usr" / "bin" / "python3.11",
    ]
    env["PYTHONPATH"] = str(site)
    report = json.loads(run([*python, SMOKE], cwd=tmp_path, env=env, timeout=600).splitlines()[-1])
    assert report["file"] == str(site / "streamx" / "__init__.py")
    assert report["version"] == report["metadata_version"] == project_version()
    cli = run([*python, "-m", "streamx", "--version"], cwd=tmp_path, env=env, timeout=300)
    assert cli.strip() == f"streamx {project_version()}"
