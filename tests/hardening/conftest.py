"""Fixtures for the hardening tests: datasets on disk, a second local user, a small tmpfs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "remote"))
sys.path.insert(0, os.path.dirname(__file__))

import remote_data

NOBODY = 65534
N = 40


@pytest.fixture
def remote(tmp_path: Path) -> str:
    """A zstd-compressed dataset of ``N`` samples in a directory, used as a stream's remote."""
    path = str(tmp_path / "remote")
    remote_data.write(path, N, compression="zstd", size_limit=6_000)
    return path


def run_as(
    uid: int, code: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -c code`` as another user (``setpriv``); the test must run as root.

    The user keeps ``CAP_DAC_READ_SEARCH`` so that it can read the interpreter and streamx
    wherever they are installed; it may still write only where its uid may."""
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("a second local user needs root and setpriv")
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            sys.executable,
            "-c",
            code,
        ],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (unmounted afterwards), where one can be mounted."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
