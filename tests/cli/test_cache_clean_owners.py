"""``streamx cache clean`` takes a partial download only when no live process owns it, by
the ``flock`` its downloader holds (never by the pid in its name, which means nothing across
containers), and only files named as streamx names a download of a file it knows (issue 27).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from cli_run import PYTHONPATH_DIR, run_cli

import streamx

# A live downloader: creates and locks a temporary file the way download_file does, then
# renames it to carry a pid from another pid namespace (one not running here); the lock
# stays with the file.
_DOWNLOADER = """
import os, sys
from streamx.storage import download
target, foreign = sys.argv[1], sys.argv[2]
tmp = download.temp_path_for(target)
fd = download._own(tmp)
os.rename(tmp, foreign)
os.utime(foreign, (1, 1))
print("holding", flush=True)
sys.stdin.read()
"""

_OLD = (1, 1)  # past clean's grace for a file not yet locked


def _clean(cache: str) -> Any:
    result = run_cli("cache", "clean", cache, "--json", process=True)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_clean_judges_temp_files_by_lock_and_name(dataset: str, tmp_path: Any) -> None:
    cache = str(tmp_path / "cache")
    dataset_ids = [
        int(s["id"]) for s in streamx.StreamingDataset(remote=dataset, local=cache, batch_size=4)
    ]
    assert sorted(dataset_ids) == list(range(300))
    unused_pid = 4_000_000  # above pid_max: no process here has it
    live = os.path.join(cache, f".shard.00002.mds.{unused_pid}.0123abcd.tmp")
    child = subprocess.Popen(
        [sys.executable, "-c", _DOWNLOADER, os.path.join(cache, "shard.00002.mds"), live],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": PYTHONPATH_DIR},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        # Dead: unlocked, although its name carries the pid of a running process.
        dead = os.path.join(cache, f".shard.00001.mds.{os.getpid()}.89abcdef.tmp")
        # A user's files that merely look like temporary files: not of a file streamx knows.
        user = os.path.join(cache, f".notes.txt.{unused_pid}.0123abcd.tmp")
        sub = os.path.join(cache, "mine")
        os.mkdir(sub)
        nested = os.path.join(sub, f".shard.00001.mds.{unused_pid}.0123abcd.tmp")
        for path in (dead, user, nested):
            with open(path, "wb") as file:
                file.write(b"bytes")
            os.utime(path, _OLD)
        (cleaned,) = _clean(cache)
        assert cleaned["temp_files"] == [dead]
        assert not os.path.exists(dead)
        assert all(os.path.exists(p) for p in (live, user, nested))

        # Once its downloader is gone (killed), the same file is taken.
        child.kill()
        child.wait()
        (cleaned,) = _clean(cache)
        assert cleaned["temp_files"] == [live]
        assert not os.path.exists(live)
        assert os.path.exists(user) and os.path.exists(nested)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()
