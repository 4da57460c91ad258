"""A ``kill -9`` of ``streamx convert`` takes its worker processes with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_run import PYTHONPATH_DIR

# Long enough that the workers are still busy when the command is killed.
FILES, ROWS = 24, 20_000
# How long the workers get to die once their parent is gone (they go at once in practice).
DEATH_WAIT_S = 30.0


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    stats = {int(e): _stat(int(e)) for e in os.listdir("/proc") if e.isdigit()}
    return [child for child, s in stats.items() if s is not None and s[1] == pid and s[0] != "Z"]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has exited; init reaps it


def test_kill_9_leaves_no_worker_running(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for f in range(FILES):
        lines = (json.dumps({"id": i, "text": f"file {f} row {i} " * 4}) for i in range(ROWS))
        (source / f"{f:03d}.jsonl").write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": PYTHONPATH_DIR}
    cmd = [
        sys.executable,
        "-m",
        "streamx",
        "convert",
        str(source),
        str(tmp_path / "out"),
        "-j",
        "2",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            workers = _children(proc.pid)
        assert len(workers) == 2, f"expected 2 workers; the command ended: {proc.poll()}"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + DEATH_WAIT_S
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = [w for w in workers if _alive(w)]
        assert not survivors, f"workers {survivors} outlived the killed convert"
    finally:
        for pid in [proc.pid, *workers]:  # a failed run leaves nothing behind either
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=30)
