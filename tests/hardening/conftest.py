"""Fixtures for the hardening tests: datasets on disk, a second local user, a small tmpfs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# remote_data (tests/remote), the dist launcher (tests/dist), the fault proxy (tests/storage).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "remote"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "dist"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "storage"))
sys.path.insert(0, os.path.dirname(__file__))

import remote_data
from hardening_support import N


@pytest.fixture
def remote(tmp_path: Path) -> str:
    """A zstd-compressed dataset of ``N`` samples in a directory, used as a stream's remote."""
    path = str(tmp_path / "remote")
    remote_data.write(path, N, compression="zstd", size_limit=6_000)
    return path


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
