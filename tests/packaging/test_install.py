"""The x86_64 wheel installs into fresh venvs on every claimed CPython found here, with and
without torch, and reports one version everywhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from release_env import (
    CLAIMED_PYTHONS,
    Artifacts,
    cli_versions,
    expose_torch,
    find_pythons,
    make_venv,
    pip_install,
    project_version,
    smoke,
)

pytestmark = pytest.mark.release

PYTHONS = find_pythons()
# A fresh venv downloads numpy and the other dependencies from the package index.
INSTALL_TEST_TIMEOUT_S = 900


def check_installed(venv: Path, workdir: Path, *, torch: bool) -> dict[str, object]:
    report = smoke(venv, workdir=workdir, torch=torch)
    assert str(report["file"]).startswith(str(report["prefix"])), "imported from the venv"
    version = project_version()
    assert report["version"] == report["metadata_version"] == version
    assert cli_versions(venv, workdir=workdir) == [f"streamx {version}"] * 2
    return report


@pytest.mark.timeout(INSTALL_TEST_TIMEOUT_S)
@pytest.mark.parametrize("version", CLAIMED_PYTHONS)
def test_wheel_installs_without_torch(artifacts: Artifacts, version: str, tmp_path: Path) -> None:
    if version not in PYTHONS:
        pytest.skip(f"no CPython {version} on this machine")
    venv = tmp_path / "venv"
    make_venv(PYTHONS[version], venv)
    pip_install(venv, artifacts.x86_64)
    report = check_installed(venv, tmp_path, torch=False)
    assert report["python"] == version
    assert report["torch"] is None


@pytest.mark.timeout(INSTALL_TEST_TIMEOUT_S)
def test_wheel_installs_with_torch(artifacts: Artifacts, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the release check links the running venv's torch")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    venv = tmp_path / "venv"
    make_venv(Path(sys.executable), venv)
    linked = expose_torch(venv)
    assert "torch" in linked
    assert "streamx-data" not in linked and "numpy" not in linked
    pip_install(venv, f"{artifacts.x86_64}[torch]")
    report = check_installed(venv, tmp_path, torch=True)
    assert report["python"] == version
    assert report["torch"]
