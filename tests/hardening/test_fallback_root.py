"""A per-user state root planted by another user sends streamx to a private fallback root;
every later process reuses that one, so processes do not each leave a directory behind, and
what a killed one left there is collected (issue 27)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import remote_data
from hardening_support import NOBODY, N

_RUN = """
import os, sys, warnings
sys.path.insert(0, {tests!r})
import remote_data, streamx
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = streamx.StreamingDataset(remote={remote!r}, local={local!r}, batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range({n}))
assert any("not a private directory" in str(w.message) for w in caught)
print(ds._state.root, flush=True)
if sys.argv[1] == "crash":
    os._exit(0)  # like kill -9: no finaliser removes its state directory
"""


def _run(code: str, how: str, tmp: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, how],
        env={**os.environ, "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_planted_root_costs_one_fallback_reused_and_collected(
    remote: str, tmp_path: Path
) -> None:
    assert os.getuid() == 0  # the planter is another uid: os.chown needs root
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    planted = shared_tmp / f"streamx-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    os.chown(planted, NOBODY, NOBODY)
    code = textwrap.dedent(_RUN).format(
        tests=os.path.dirname(remote_data.__file__),
        remote=remote,
        local=str(tmp_path / "cache"),
        n=N,
    )
    crashed = _run(code, "crash", shared_tmp)
    assert os.path.isdir(crashed)  # left behind by the dead process
    roots = [_run(code, "exit", shared_tmp) for _ in range(3)]
    fallbacks = sorted(p for p in shared_tmp.iterdir() if p != planted)
    assert len(fallbacks) == 1, fallbacks
    (fallback,) = fallbacks
    assert fallback.name.startswith(f"streamx-{os.getuid()}-")
    assert (fallback.stat().st_uid, fallback.stat().st_mode & 0o777) == (os.getuid(), 0o700)
    for root in [crashed, *roots]:
        assert Path(root).is_relative_to(fallback), root
    assert not os.path.exists(crashed)  # collected by the next process
    assert not any(os.path.exists(r) for r in roots)
    assert os.listdir(planted) == []  # never used
