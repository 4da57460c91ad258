"""``streamx cache clean`` takes a partial download only when no live process owns it, by
the ``flock`` its downloader holds (never by the pid in its name, which means nothing across
containers), and only files named as streamx names a download of a file it knows (issue 27).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from cli_run import PYTHONPATH_DIR, run_cli
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by its conftest

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


# A real download in 1 MiB parts of an 8 MiB object served at 1 MB/s, into a shard's name.
_PARTS_DOWNLOADER = """
import sys
from streamx.storage.download import download_file
from streamx.storage.slots import LocalSlots
download_file(sys.argv[1], sys.argv[2], expected_size=8 << 20, slots=LocalSlots(2))
"""


def _records(cache: str) -> list[str]:
    return sorted(n for n in os.listdir(cache) if n.startswith(".shard.00003.mds."))


@pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")
def test_clean_takes_a_killed_downloads_record_of_landed_parts_never_a_live_ones(
    dataset: str, tmp_path: Any
) -> None:
    cache = str(tmp_path / "cache")
    list(streamx.StreamingDataset(remote=dataset, local=cache, batch_size=4))
    served = tmp_path / "served"
    served.mkdir()
    (served / "big.bin").write_bytes(os.urandom(8 << 20))
    with Nginx(served, limit_rate="1m") as server:
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PARTS_DOWNLOADER,
                f"{server.endpoint}/big.bin",
                os.path.join(cache, "shard.00003.mds"),
            ],
            env={
                **os.environ,
                "PYTHONPATH": PYTHONPATH_DIR,
                "STREAMX_DOWNLOAD_PART_SIZE": str(1 << 20),
            },
        )
        try:
            deadline = time.monotonic() + 60
            while not any(n.endswith(".parts") for n in _records(cache)):
                assert child.poll() is None and time.monotonic() < deadline, _records(cache)
                time.sleep(0.05)
            os.kill(child.pid, signal.SIGSTOP)  # a live download, its files aged past the grace
            names = _records(cache)
            assert [n.rsplit(".", 1)[1] for n in names] == ["parts", "tmp"]
            for name in names:
                os.utime(os.path.join(cache, name), _OLD)
            (cleaned,) = _clean(cache)
            assert cleaned["temp_files"] == [] and _records(cache) == names

            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            (cleaned,) = _clean(cache)
            assert cleaned["temp_files"] == [os.path.join(cache, n) for n in names]
            assert _records(cache) == []
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()


def test_clean_takes_old_records_and_scratch_files_of_dead_or_gone_downloads(
    dataset: str, tmp_path: Any
) -> None:
    cache = str(tmp_path / "cache")
    list(streamx.StreamingDataset(remote=dataset, local=cache, batch_size=4))
    pid = os.getpid()  # a running process's pid in the names: judged by lock, not by pid
    dead_tmp = os.path.join(cache, f".shard.00004.mds.{pid}.01234567.tmp")  # unlocked
    scratch = os.path.join(cache, f".shard.00004.mds.{pid}.01234567.h1048576.{pid}.89abcdef.tmp")
    orphan = os.path.join(cache, f".shard.00001.mds.{pid}.89abcdef.parts")  # no .tmp left
    orphan_scratch = os.path.join(cache, f".shard.00001.mds.{pid}.89abcdef.h0.{pid}.0badcafe.tmp")
    young = os.path.join(cache, f".shard.00002.mds.{pid}.89abcdef.parts")
    for path in (dead_tmp, scratch, orphan, orphan_scratch, young):
        with open(path, "wb") as file:
            file.write(b"bytes")
        if path != young:
            os.utime(path, _OLD)
    (cleaned,) = _clean(cache)
    assert cleaned["temp_files"] == sorted([dead_tmp, scratch, orphan, orphan_scratch])
    assert os.path.exists(young)  # kept for the grace, as a young .tmp is
