"""Helpers the hardening tests share (a module of its own: test modules cannot import
``conftest`` by name when several directories have one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

NOBODY = 65534
N = 40


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
