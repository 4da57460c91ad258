"""Running the ``streamx`` command in tests: in this process, or as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHONPATH_DIR = os.path.join(os.path.dirname(_TESTS), "python")


@dataclass
class Result:
    """A finished ``streamx`` process."""

    code: int
    out: str
    err: str


def run_cli(
    *args: str, env: dict[str, str] | None = None, process: bool = False, timeout: float = 120
) -> Result:
    """Runs ``streamx ARGS``: in this process through click's runner (fast; the current
    environment applies), or with ``process`` as ``python -m streamx`` in a fresh process
    with this checkout on the path, the way users start it."""
    if not process:
        from typer.testing import CliRunner

        from streamx.cli.app import app

        done = CliRunner(env=env).invoke(app, list(args), catch_exceptions=False)
        return Result(done.exit_code, done.stdout, done.stderr)
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join(
        p for p in (PYTHONPATH_DIR, full.get("PYTHONPATH", "")) if p
    )
    ran = subprocess.run(
        [sys.executable, "-m", "streamx", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        check=False,
    )
    return Result(ran.returncode, ran.stdout, ran.stderr)


def assert_one_line_failure(result: Result, *needles: str) -> None:
    """A failure: non-zero exit, one ``error:`` line on stderr naming ``needles``, no traceback."""
    assert result.code != 0, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
