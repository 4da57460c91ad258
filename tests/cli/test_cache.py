"""``streamx cache`` against the ledger real StreamingDatasets keep, with real processes
holding pins (and dying with them)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from cli_run import PYTHONPATH_DIR, assert_one_line_failure, run_cli

import streamx
from background_downloads import assert_no_downloads_running
from streamx import _core

_PINNER = """
import sys
from streamx import _core
path, shards, shard = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
limit = _core.ledger_snapshot(path)["limit"]
# Pins belong to the ledger object's owner lock: keep the object while the pin is held.
ledger = _core.CacheLedger(path, shards, limit)
ledger.pin(shard)
print("pinned", flush=True)
sys.stdin.read()
"""


def _stream_through(remote: str, local: str, **kwargs: Any) -> list[int]:
    """Every sample's id; the pass waits for the downloads behind them to be recorded."""
    dataset = streamx.StreamingDataset(remote=remote, local=local, batch_size=4, **kwargs)
    ids = [int(sample["id"]) for sample in dataset]
    assert_no_downloads_running(dataset)
    return ids


def _json(*args: str) -> Any:
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.fixture
def pinner(tmp_path: Any) -> Any:
    """Starts a process that pins one shard of a ledger and holds it until killed."""
    children: list[subprocess.Popen[str]] = []

    def start(ledger: str, shards: int, shard: int) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", _PINNER, ledger, str(shards), str(shard)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": PYTHONPATH_DIR},
        )
        children.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "pinned"
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


def test_usage_ls_evict_clean_with_a_live_then_dead_pinner(
    dataset: str, tmp_path: Any, pinner: Any
) -> None:
    cache = str(tmp_path / "cache")
    assert sorted(_stream_through(dataset, cache)) == list(range(300))
    (usage,) = _json("cache", "usage", cache)
    on_disk = sorted(f for f in os.listdir(cache) if f.startswith("shard."))
    assert usage["local"] == len(on_disk) == usage["shards"] == 33
    assert usage["usage"] == sum(os.path.getsize(os.path.join(cache, f)) for f in on_disk)
    assert (usage["stale_pins"], usage["pinned"], usage["named"]) == (0, 0, True)

    child = pinner(usage["ledger"], usage["shards"], 5)
    (listing,) = _json("cache", "ls", cache)
    row = next(r for r in listing["shards"] if r["shard"] == 5)
    assert row["name"] == "shard.00005.mds"
    assert row["pinned_by"] == [{"pid": child.pid, "alive": True, "count": 1}]
    assert _json("cache", "usage", cache)[0]["live_pids"] == [child.pid]

    refused = run_cli("cache", "evict", cache, "--shard", "5", process=True)
    assert_one_line_failure(refused, "pinned by running", str(child.pid))
    (report,) = _json("cache", "evict", cache, "--all")
    assert sorted(e["shard"] for e in report["evicted"]) == [s for s in range(33) if s != 5]
    left = sorted(f for f in os.listdir(cache) if f.startswith("shard."))
    assert left == [f for f in on_disk if f.startswith("shard.00005.")]

    child.send_signal(signal.SIGKILL)
    child.wait()
    dead_tmp = os.path.join(cache, f".shard.00001.mds.{child.pid}.0123abcd.tmp")
    live_tmp = os.path.join(cache, f".shard.00002.mds.{os.getpid()}.0123abcd.tmp")
    for path in (dead_tmp, live_tmp):
        open(path, "wb").close()
        os.utime(path, (1, 1))  # past clean's grace for a download not yet locked
    owner = os.open(live_tmp, os.O_RDONLY)  # a live download holds a lock on its file
    fcntl.flock(owner, fcntl.LOCK_SH)
    assert _json("cache", "usage", cache)[0]["stale_pins"] == 1
    (cleaned,) = _json("cache", "clean", cache)
    assert cleaned["stale_pins"] == 1 and cleaned["temp_files"] == [dead_tmp]
    assert not os.path.exists(dead_tmp) and os.path.exists(live_tmp)
    os.close(owner)
    assert _json("cache", "usage", cache)[0]["stale_pins"] == 0
    (report,) = _json("cache", "evict", cache, "--shard", "5")
    assert [e["shard"] for e in report["evicted"]] == [5]
    assert _core.ledger_snapshot(usage["ledger"])["usage"] == 0
    assert sorted(_stream_through(dataset, cache)) == list(range(300))  # the job still runs


def test_evict_to_a_byte_target_takes_the_coldest(dataset: str, tmp_path: Any) -> None:
    cache = str(tmp_path / "cache")
    _stream_through(dataset, cache)
    before = _json("cache", "usage", cache)[0]["usage"]
    (report,) = _json("cache", "evict", cache, "--to", str(before // 2))
    after = _json("cache", "usage", cache)[0]["usage"]
    assert after <= before // 2 < after + max(e["bytes"] for e in report["evicted"])
    assert before - after == sum(e["bytes"] for e in report["evicted"])


def test_local_only_stream_files_are_never_deleted(
    dataset: str, split_dataset: str, tmp_path: Any
) -> None:
    cache = str(tmp_path / "cache")
    own = os.path.join(split_dataset, "train")
    streams = [streamx.Stream(remote=dataset, local=cache), streamx.Stream(local=own)]
    ids = [int(s["id"]) for s in streamx.StreamingDataset(streams=streams, batch_size=4)]
    assert len(ids) == 400
    before = sorted(os.listdir(own))
    (usage,) = _json("cache", "usage", cache)
    assert usage["unevictable"] == 11 and usage["named"]  # by the ledger's file manifest
    assert_one_line_failure(run_cli("cache", "evict", cache, "--shard", "40"), "only copy")
    (report,) = _json("cache", "evict", cache, "--all")
    assert sorted(e["shard"] for e in report["evicted"]) == list(range(usage["local"]))
    assert not any(f.startswith("shard.") for f in os.listdir(cache))
    assert sorted(os.listdir(own)) == before
    again = [int(s["id"]) for s in streamx.StreamingDataset(streams=streams, batch_size=4)]
    assert sorted(again) == sorted(ids)


def test_evict_across_the_remote_streams_of_a_mixed_dataset(
    dataset: str, split_dataset: str, tmp_path: Any
) -> None:
    """Two remote streams cached in two directories: ids name files in both, and eviction
    deletes in both, exactly the files the job registered."""
    first, second = str(tmp_path / "c1"), str(tmp_path / "c2")
    streams = [
        streamx.Stream(remote=dataset, local=first),
        streamx.Stream(remote=split_dataset, local=second, split="val"),
    ]
    assert len(list(streamx.StreamingDataset(streams=streams, batch_size=4))) == 340
    (listing,) = _json("cache", "ls", first)
    names = {r["shard"]: r["name"] for r in listing["shards"]}
    assert names[0] == "shard.00000.mds"
    val_dir = os.path.realpath(os.path.join(second, "val"))
    assert names[len(names) - 1].startswith(val_dir + os.sep)
    planted = os.path.join(second, "val", "notes.txt")
    with open(planted, "w") as file:
        file.write("the user's own file")
    (report,) = _json("cache", "evict", first, "--to", "0")
    assert len(report["evicted"]) == len(names)
    assert not any(f.startswith("shard.") for f in os.listdir(first))
    left = sorted(f for f in os.listdir(os.path.join(second, "val")) if f != ".streamx")
    assert left == ["index.json", "notes.txt"]
    with open(planted) as file:
        assert file.read() == "the user's own file"
    assert _json("cache", "usage", first)[0]["usage"] == 0


def test_a_bad_manifest_refuses_eviction_but_not_reading(
    dataset: str, split_dataset: str, tmp_path: Any
) -> None:
    cache = str(tmp_path / "cache")
    streams = [
        streamx.Stream(remote=dataset, local=cache),
        streamx.Stream(local=os.path.join(split_dataset, "train")),
    ]
    assert len(list(streamx.StreamingDataset(streams=streams, batch_size=4))) == 400
    (usage,) = _json("cache", "usage", cache)
    manifest = usage["ledger"] + ".files.json"
    with open(manifest, "w") as file:
        file.write('{"version": 1, "files": [["relative/path"]], "sizes": [[1]]}')
    assert not _json("cache", "usage", cache)[0]["named"]
    assert _json("cache", "ls", cache)[0]["shards"]
    on_disk = sorted(os.listdir(cache))
    refused = run_cli("cache", "evict", cache, "--all")
    assert_one_line_failure(refused, manifest, "describes 1 shards")
    os.remove(manifest)
    os.symlink(os.path.join(dataset, "index.json"), manifest)
    assert_one_line_failure(run_cli("cache", "evict", cache, "--all"), manifest, "cannot open")
    assert sorted(os.listdir(cache)) == on_disk


def test_cache_failures_are_one_line(tmp_path: Any) -> None:
    assert_one_line_failure(run_cli("cache", "usage", str(tmp_path)), "no cache ledger")
    assert_one_line_failure(
        run_cli("cache", "ls", str(tmp_path / "absent")), "No such cache directory"
    )
    assert_one_line_failure(run_cli("cache", "evict", str(tmp_path)), "exactly one of")
