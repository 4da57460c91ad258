"""The cache ledger file under attack: a full disk, a half-made or truncated file, a planted
symlink, and owners in other PID namespaces."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import remote_data
from hardening_support import N

import streamx
from streamx import _core


def _ledger_path(ds: streamx.StreamingDataset) -> str:
    cache = ds._shard_cache
    assert cache is not None
    return str(cache.ledger.path)


def test_full_disk_is_a_clean_error_then_recovers(remote: str, small_tmpfs: Path) -> None:
    local = small_tmpfs / "cache"
    local.mkdir()
    # Leave a few KiB: the index fits, the ledger (hundreds of KiB for 20k shards) does not.
    with open(small_tmpfs / "filler", "wb") as filler:
        filler.write(b"\0" * (2 * 1024 * 1024 - 64 * 1024))
    code = textwrap.dedent(
        f"""
        from streamx import _core
        try:
            _core.CacheLedger({str(local / "ledger")!r}, 5_000, None, None)
        except OSError as err:
            print("OSError", err)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    # A SIGBUS from a write through the mapping would show as -7.
    assert done.returncode == 0, done.stderr
    assert "No space left on device" in done.stdout
    assert not any(".tmp" in name for name in os.listdir(local))
    os.remove(small_tmpfs / "filler")
    ledger = _core.CacheLedger(str(local / "ledger"), 5_000, None, None)
    assert ledger.usage == 0 and ledger.state(4_999) == "remote"


def test_a_dataset_on_a_full_disk_fails_cleanly(remote: str, small_tmpfs: Path) -> None:
    local = small_tmpfs / "cache"
    local.mkdir()
    shutil.copy(os.path.join(remote, "index.json"), local / "index.json")
    with open(small_tmpfs / "filler", "wb") as filler:
        filler.write(b"\0" * (2 * 1024 * 1024 - 8 * 1024))
    code = f"""
import streamx
try:
    streamx.StreamingDataset(remote={remote!r}, local={str(local)!r}, batch_size=4)
except OSError as err:
    print("OSError", err)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "No space left on device" in done.stdout
    os.remove(small_tmpfs / "filler")
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))


@pytest.mark.parametrize("damage", ["empty", "zeroes", "truncated", "garbage"])
def test_a_half_made_ledger_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "ledger"
    ledger = _core.CacheLedger(str(path), 8, None, None)
    assert ledger.begin_download(3, 10)[0] == "download"
    ledger.finish_download(3, 10)
    size = path.stat().st_size
    del ledger
    content = {
        "empty": b"",
        "zeroes": b"\0" * size,
        "truncated": path.read_bytes()[: size // 2],
        "garbage": os.urandom(size),
    }[damage]
    path.write_bytes(content)
    again = _core.CacheLedger(str(path), 8, None, None)
    assert again.state(3) == "remote" and again.usage == 0
    assert path.stat().st_size == size


def test_a_ledger_of_another_shard_count_is_refused(tmp_path: Path) -> None:
    _core.CacheLedger(str(tmp_path / "ledger"), 8, None, None)
    with pytest.raises(ValueError, match="another shard count"):
        _core.CacheLedger(str(tmp_path / "ledger"), 9, None, None)


def test_a_planted_ledger_symlink_is_never_followed(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    ledger = _ledger_path(ds)
    del ds
    shutil.rmtree(local)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.makedirs(os.path.dirname(ledger))
    os.symlink(victim, ledger)
    with pytest.raises(OSError, match="symbolic link"):
        streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert victim.read_bytes() == b"precious"
    os.remove(ledger)
    os.remove(ledger + ".lock")
    os.symlink(victim, ledger + ".lock")  # the lock file is opened the same way
    with pytest.raises(OSError):
        streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert victim.read_bytes() == b"precious"


_HOLDER = """
import sys, time
from streamx import _core
ledger = _core.CacheLedger(sys.argv[1], 4, 100, None)
assert ledger.begin_download(0, 10)[0] == "download"
ledger.finish_download(0, 10)
assert ledger.begin_download(1, 10)[0] == "download"
assert ledger.pin(0)
print("ready", flush=True)
time.sleep(600)
"""


def test_owners_in_another_pid_namespace_are_alive_until_they_die(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.decode().strip()}")
    path = str(tmp_path / "ledger")
    holder = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", _HOLDER, path],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        # The holder is pid 1 in its namespace, maybe the pid of a process here: pids say
        # nothing, yet its download and pin are its own while it lives.
        ledger = _core.CacheLedger(path, 4, 100, None)
        assert ledger.begin_download(1, 10)[0] == "wait"
        assert ledger.recover() == (0, 0)
        assert ledger.pins(0) == 1
        with pytest.raises(ValueError, match="not being downloaded by this process"):
            ledger.finish_download(1, 10)
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    # The holder inside the namespace dies a moment after `unshare`: poll for its locks.
    recovered = (0, 0)
    for _ in range(200):
        got = ledger.recover()
        recovered = (recovered[0] + got[0], recovered[1] + got[1])
        if recovered == (1, 1):
            break
        time.sleep(0.05)
    assert recovered == (1, 1)
    assert ledger.begin_download(1, 10)[0] == "download"
    assert ledger.pins(0) == 0


_PINNER = """
import sys, time
from streamx import _core
ledger = _core.CacheLedger(sys.argv[1], int(sys.argv[2]), 1 << 40, None)
print(sum(ledger.pin(s) for s in range(ledger.num_shards)), flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_pins_never_fail_a_run_when_the_table_is_full(tmp_path: Path) -> None:
    path, shards = str(tmp_path / "ledger"), 300
    slots = 4 * shards + 4096  # the table's size for this many shards
    pinners = [
        subprocess.Popen(
            [sys.executable, "-c", _PINNER, path, str(shards)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(20)
    ]
    try:
        pinned = [int(p.stdout.readline()) for p in pinners if p.stdout is not None]
    finally:
        for p in pinners:
            p.communicate("")
    assert all(p.returncode == 0 for p in pinners)
    assert sum(pinned) == slots  # every slot was used, and the pins beyond were skipped
