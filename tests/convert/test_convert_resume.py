"""A converter killed with SIGKILL and started again finishes without redoing finished parts,
and its output equals an uninterrupted run's, byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from convert_helpers import read_both, tree_bytes

SCRIPT = """
import json, sys, time
from streamx.convert import optimize

def slow(i):
    time.sleep(0.05)
    return {"i": i, "text": "x" * i}

if __name__ == "__main__":
    result = optimize(slow, range(60), sys.argv[1], num_workers=2, inputs_per_part=3,
                      progress=False)
    print(json.dumps({"skipped": result.skipped, "samples": result.samples}))
"""


def _start(script: str, out: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    return subprocess.Popen(
        [sys.executable, script, out],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the kill reaches the workers too
    )


def _stamps(root: str, parts: list[str]) -> dict[str, tuple[int, int]]:
    out = {}
    for part in parts:
        for name in os.listdir(os.path.join(root, part)):
            st = os.stat(os.path.join(root, part, name))
            out[f"{part}/{name}"] = (st.st_ino, st.st_mtime_ns)
    return out


@pytest.mark.timeout(300)  # two conversions, each allowed 120 s
def test_sigkill_then_resume(tmp_path: Any) -> None:
    script = str(tmp_path / "job.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    out = str(tmp_path / "out")
    proc = _start(script, out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = [p for p in os.listdir(out) if p.startswith("part-")] if os.path.isdir(out) else []
        if len(done) >= 4:
            break
        assert proc.poll() is None, "the converter finished before it could be killed"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()  # type: ignore[union-attr]
    assert not os.path.exists(os.path.join(out, "index.json"))  # nothing readable yet
    done = sorted(p for p in os.listdir(out) if p.startswith("part-"))
    assert 4 <= len(done) < 20
    for part in done:  # every visible part is complete
        read_both(os.path.join(out, part))
    before = _stamps(out, done)

    rerun = _start(script, out)
    stdout, _ = rerun.communicate(timeout=120)
    assert rerun.returncode == 0
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["skipped"] >= len(done)
    assert result["samples"] == 60 - 3 * result["skipped"]
    assert _stamps(out, done) == before  # finished parts were not rewritten
    assert sorted(os.listdir(out)) == ["index.json"] + [f"part-{i:05d}" for i in range(20)]

    clean = str(tmp_path / "clean")
    whole = _start(script, clean)
    whole.communicate(timeout=120)
    assert whole.returncode == 0
    assert tree_bytes(out) == tree_bytes(clean)
    rows = read_both(out)
    assert [(r["i"], r["text"]) for r in rows] == [(i, "x" * i) for i in range(60)]
