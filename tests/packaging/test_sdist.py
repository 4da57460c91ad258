"""The sdist holds what a build needs and nothing built, and builds with the Rust toolchain."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from release_env import (
    FILE_NAME,
    Artifacts,
    clean_env,
    find_pythons,
    make_venv,
    pip_install,
    project_version,
    run,
)
from test_install import check_installed

pytestmark = pytest.mark.release

# A release build of the extension from nothing, on a 2-core machine.
BUILD_TIMEOUT_S = 1800


def test_sdist_contents(artifacts: Artifacts) -> None:
    version = project_version()
    assert artifacts.sdist.name == f"{FILE_NAME}-{version}.tar.gz"
    with tarfile.open(artifacts.sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in (
        "Cargo.toml",
        "Cargo.lock",
        "pyproject.toml",
        "PKG-INFO",
        "rust/streamx-core/Cargo.toml",
        "rust/streamx-py/Cargo.toml",
        "python/streamx/__init__.py",
        "python/streamx/_core.pyi",
        "python/streamx/py.typed",
    ):
        assert needed in names, f"{needed} missing from {artifacts.sdist.name}"
    built = [n for n in names if n.endswith(".so") or n.startswith(("target/", "dist/"))]
    assert not built, f"build outputs in the sdist: {built}"


@pytest.mark.timeout(BUILD_TIMEOUT_S)
def test_sdist_builds_and_works(artifacts: Artifacts, tmp_path: Path) -> None:
    python = find_pythons().get("3.11") or next(iter(find_pythons().values()))
    venv = tmp_path / "venv"
    make_venv(python, venv)
    wheels = tmp_path / "wheels"
    # pip builds in an isolated environment: maturin from the index, then cargo and rustc.
    env = clean_env(venv)
    env.pop("CARGO_TARGET_DIR", None)
    # `make release-check` names the checkout's target dir (`make build-dev`'s): the crates.io
    # dependencies already compiled there by the same rustc are reused; streamx's own crates
    # always compile from the sdist's sources (their path is part of their identity in cargo).
    shared_target = os.environ.get("STREAMX_SDIST_CARGO_TARGET_DIR")
    if shared_target:
        env["CARGO_TARGET_DIR"] = shared_target
    run(
        [venv / "bin" / "python", "-m", "pip", "wheel", "--no-deps", "-w", wheels, artifacts.sdist],
        cwd=tmp_path,
        env=env,
        timeout=BUILD_TIMEOUT_S,
    )
    (built,) = wheels.glob(f"{FILE_NAME}-*.whl")
    assert built.name.startswith(f"{FILE_NAME}-{project_version()}-cp310-abi3-")
    pip_install(venv, built)
    check_installed(venv, tmp_path, torch=False)
