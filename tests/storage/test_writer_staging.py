"""A writer to a remote killed with ``kill -9`` leaves its staging directory; the next writer
to the same remote, or ``streamx cache clean``, collects it, judging by ``flock`` (issue 27)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamx import MDSWriter
from streamx.storage.staging import PREFIX, collect_dead_staging

_PYTHON_DIR = str(Path(__file__).resolve().parents[2] / "python")

_WRITER = """
import os, sys, time
from streamx import MDSWriter
w = MDSWriter(out=sys.argv[1], columns={"b": "bytes"}, size_limit=1 << 14)
for i in range(40):
    w.write({"b": os.urandom(1000)})
print(w._output.local, flush=True)
time.sleep(600)
"""


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private temporary directory for this process and the writers it starts."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def writers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _start(out: str, started: list[subprocess.Popen[str]]) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": _PYTHON_DIR}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, out], stdout=subprocess.PIPE, text=True, env=env
    )
    started.append(proc)
    assert proc.stdout is not None
    staging = proc.stdout.readline().strip()
    assert staging and os.path.isdir(staging), staging
    return proc, staging


def _kill9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.remote
def test_next_writer_collects_a_killed_writers_staging(
    s3: Any, temp: Path, writers: list[subprocess.Popen[str]]
) -> None:
    killed, left = _start(s3.url("ds"), writers)
    live, live_staging = _start(s3.url("ds"), writers)  # same remote, still running
    _, other = _start(s3.url("other"), writers)
    _kill9(killed)
    assert os.path.isdir(left), "kill -9 leaves the directory behind"
    with MDSWriter(out=s3.url("ds"), columns={"b": "bytes"}) as w:
        w.write({"b": b"x"})
    assert not os.path.exists(left), "the next writer to the same remote collects it"
    assert os.path.isdir(live_staging), "a live writer's staging is never touched"
    assert os.path.isdir(other), "a live writer to another remote is never touched"
    assert json.loads(s3.get("ds/index.json"))["shards"]
    _kill9(live)
    assert collect_dead_staging(s3.url("elsewhere")) == []
    assert collect_dead_staging(s3.url("ds")) == [live_staging]


@pytest.mark.remote
def test_cache_clean_collects_killed_writers_only(
    s3: Any, temp: Path, tmp_path: Path, writers: list[subprocess.Popen[str]]
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_run import run_cli

    killed, left = _start(s3.url("a"), writers)
    _, live_staging = _start(s3.url("b"), writers)
    kept = MDSWriter(out=s3.url("c"), columns={"b": "bytes"}, keep_local=True)
    kept.write({"b": b"x"})
    kept.finish()
    kept_dir = kept._output.local
    _kill9(killed)
    empty = tmp_path / "no-ledgers"
    empty.mkdir()
    done = run_cli("cache", "clean", str(empty), "--json", env={"TMPDIR": str(temp)})
    assert done.code == 0, done.err
    assert json.loads(done.out) == [{"writer_staging": [left]}]
    assert not os.path.exists(left)
    assert os.path.isdir(live_staging)
    assert os.path.isdir(kept_dir) and os.listdir(kept_dir), "a finished, kept one stays"
    assert sorted(n for n in os.listdir(temp) if n.startswith(PREFIX)) == sorted(
        os.path.basename(p) for p in (live_staging, kept_dir)
    )
