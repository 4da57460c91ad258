"""The py1e count cache (issue 24): a worker's pieces read with an epoch's counted draws from
the cache equal those counted and ``plan_worker``'s ids, in this process and in a new one
(after ``kill -9`` too); a tampered, foreign or planted file is not used and the order stays
right; a directory another user could write is not used; small epochs leave nothing."""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
import streamx.order.epoch as epoch_module
from count_cache_helpers import plan_in_pieces, private_dir
from plan_configs import plan_config
from streamx import _core
from streamx.cache.order_counts import count_cache_dir
from streamx.order.epoch import worker_id_pieces
from streamx.order.settings import PlanConfig
from streamx.order.world import World

SIZES = [37, 120, 0, 88, 400, 5, 61, 230, 17, 150]
NOBODY = 65534


def _config(**changes: Any) -> PlanConfig:
    return plan_config(SIZES, **changes)


CONFIGS: list[dict[str, Any]] = [
    {},
    {"shuffle_block_size": 1},
    {"shuffle_block_size": 20_000, "num_canonical_nodes": 1},
    {"num_canonical_nodes": 8, "world": (4, 2, 1), "partition_algo": "orig"},
    {"sample_in_epoch": 301, "batch_size": 3},
    {"world": (3, 2, 2), "initial_physical_nodes": 2, "batch_size": 6},
    {"streams": [(SIZES, 1700, 1.5)], "epoch": 4},
    {"streams": [(SIZES[:5], 300, 0.5), (SIZES[5:], 500, 0.5)]},
]


@pytest.mark.parametrize("changes", CONFIGS)
def test_pieces_with_the_cache_equal_the_whole_worker_plan(
    changes: dict[str, Any], tmp_path: Path
) -> None:
    config = _config(**changes)
    ncn = config["num_canonical_nodes"]
    cache = private_dir(tmp_path / "counts")
    nodes, ranks, workers = config["world"]
    # The last worker first: it counts every canonical node, and the others read them all.
    indices = sorted(itertools.product(range(nodes), range(ranks), range(workers)), reverse=True)
    for n, index in enumerate(indices):
        want, _ = _core.plan_worker(config, *index)
        got, stats = plan_in_pieces(config, index, cache)
        np.testing.assert_array_equal(got, want, err_msg=str(index))
        assert stats is not None and stats[2] is None
        if n == 0:
            assert stats[:2] == (0, ncn)
        else:
            assert stats[0] == ncn
    assert len(os.listdir(cache)) == 1


def test_no_cache_where_nothing_is_counted_in_pieces(tmp_path: Path) -> None:
    cache = private_dir(tmp_path / "counts")
    for changes in ({"shuffle_algo": "naive"}, {"batching_method": "per_stream"}):
        config = _config(**changes)
        got, stats = plan_in_pieces(config, (0, 0, 0), cache)
        np.testing.assert_array_equal(got, _core.plan_worker(config, 0, 0, 0)[0])
        assert stats is None
    got, stats = plan_in_pieces(_config(shuffle=False), (0, 0, 0), cache)
    assert stats is None
    assert os.listdir(cache) == []


def test_small_counts_leave_no_file(tmp_path: Path) -> None:
    """Below ``COUNT_CACHE_MIN_SAMPLES`` counted samples nothing is written."""
    cache = private_dir(tmp_path / "counts")
    world = World(num_nodes=2, ranks_per_node=2, rank=3, workers_per_rank=2, worker_of_rank=1)
    pieces = list(worker_id_pieces(_config(), world, count_cache=cache))
    assert sum(len(p) for p in pieces) > 0
    assert os.listdir(cache) == []


_CHILD = textwrap.dedent(
    """
    import json, logging, os, sys, time
    import numpy as np
    from streamx import _core
    config, cache, pause = json.loads(sys.argv[1])
    config["streams"] = [tuple(s) for s in config["streams"]]
    config["world"] = tuple(config["world"])
    pieces, _ = _core.plan_worker_pieces(
        config, 1, 1, 1, count_cache_dir=cache, count_cache_min_samples=0
    )
    first = pieces.next_piece(5)
    print(json.dumps({"stats": pieces.count_cache_stats, "first": first.tolist()}), flush=True)
    if pause:
        time.sleep(600)
    """
)


def _child(config: PlanConfig, cache: Path, pause: bool = False) -> subprocess.Popen[str]:
    arg = json.dumps([config, str(cache), pause])
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, arg],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _child_result(config: PlanConfig, cache: Path) -> dict[str, Any]:
    child = _child(config, cache)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


def test_a_new_process_reads_the_file_a_killed_one_wrote(tmp_path: Path) -> None:
    """A process counts the draws, writes them, and dies by ``kill -9``; the next one reads
    the file (its stats say so; the file is not written again) and orders the same."""
    config = _config(num_canonical_nodes=2)
    cache = private_dir(tmp_path / "counts")
    first = _child(config, cache, pause=True)
    assert first.stdout is not None
    line = first.stdout.readline()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    killed = json.loads(line)
    assert killed["stats"] == [0, 2, None]
    (name,) = os.listdir(cache)
    written = (cache / name).stat()
    again = _child_result(config, cache)
    assert again["stats"] == [2, 0, None]
    assert again["first"] == killed["first"]
    assert (cache / name).stat().st_mtime_ns == written.st_mtime_ns
    want, _ = _core.plan_worker(config, 1, 1, 1)
    assert again["first"] == want[:5].tolist()


def _tamper(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_tampered_or_foreign_file_is_not_used(tmp_path: Path) -> None:
    config = _config()
    want, _ = _core.plan_worker(config, 1, 1, 1)
    cache = private_dir(tmp_path / "counts")
    plan_in_pieces(config, (1, 1, 1), cache)
    (name,) = os.listdir(cache)
    for at in (0, 9, 50, 200, -1):
        _tamper(cache / name, at)
        got, stats = plan_in_pieces(config, (1, 1, 1), cache)
        np.testing.assert_array_equal(got, want)
        assert stats is not None and stats[0] == 0
        assert stats[2] is not None and "does not hold this epoch's draws" in stats[2]
        assert plan_in_pieces(config, (1, 1, 1), cache)[1] == (4, 0, None)  # rewritten whole
    # Another epoch's file under this epoch's name.
    other = private_dir(tmp_path / "other")
    plan_in_pieces(_config(epoch=2), (1, 1, 1), other)
    (other_name,) = os.listdir(other)
    os.replace(other / other_name, cache / name)
    got, stats = plan_in_pieces(config, (1, 1, 1), cache)
    np.testing.assert_array_equal(got, want)
    assert stats is not None and stats[0] == 0 and stats[2] is not None


def test_a_directory_others_can_write_is_not_used(tmp_path: Path) -> None:
    config = _config()
    want, _ = _core.plan_worker(config, 1, 1, 1)
    for mode in (0o777, 0o770):
        shared = tmp_path / f"shared-{mode:o}"
        shared.mkdir()
        shared.chmod(mode)
        got, stats = plan_in_pieces(config, (1, 1, 1), shared)
        np.testing.assert_array_equal(got, want)
        assert stats is not None and stats[:2] == (0, 0)
        assert stats[2] is not None and "only it can write" in stats[2]
        assert os.listdir(shared) == []
    missing = tmp_path / "missing"
    got, stats = plan_in_pieces(config, (1, 1, 1), missing)
    np.testing.assert_array_equal(got, want)
    assert stats is not None and stats[2] is not None
    assert not missing.exists()


def test_the_directory_is_private_under_the_first_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(private_dir(tmp_path / "tmp")))
    local = tmp_path / "local"
    local.mkdir()
    chosen = count_cache_dir(str(local))
    assert chosen == str(local / ".streamx" / f"order-{os.getuid()}")
    info = os.lstat(chosen)
    assert (info.st_uid, info.st_mode & 0o7777) == (os.getuid(), 0o700)
    # A local directory every user can write (not sticky): the user's private root instead.
    for mode in (0o777, 0o775):
        shared = tmp_path / f"shared-{mode:o}"
        shared.mkdir()
        shared.chmod(mode)
        chosen = count_cache_dir(str(shared))
        assert chosen is not None and chosen.startswith(str(tmp_path / "tmp")), chosen
        assert not (shared / ".streamx").exists()
        assert os.lstat(chosen).st_mode & 0o7777 == 0o700
    # A planted symlink in place of our directory is not followed.
    planted = tmp_path / "planted"
    planted.mkdir()
    target = private_dir(tmp_path / "elsewhere")
    (planted / ".streamx").mkdir()
    (planted / ".streamx" / f"order-{os.getuid()}").symlink_to(target)
    chosen = count_cache_dir(str(planted))
    assert chosen is not None and chosen.startswith(str(tmp_path / "tmp"))


@pytest.mark.skipif(os.getuid() != 0, reason="another user's files need root to make")
def test_another_users_directory_or_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(private_dir(tmp_path / "tmp")))
    config = _config()
    want, _ = _core.plan_worker(config, 1, 1, 1)
    # Our directory's name, made by another user first.
    local = tmp_path / "local"
    planted = local / ".streamx" / f"order-{os.getuid()}"
    planted.mkdir(parents=True)
    os.chown(planted, NOBODY, NOBODY)
    chosen = count_cache_dir(str(local))
    assert chosen is not None and not chosen.startswith(str(local)), chosen
    got, stats = plan_in_pieces(config, (1, 1, 1), planted)
    np.testing.assert_array_equal(got, want)
    assert stats is not None and stats[2] is not None and "only it can write" in stats[2]
    # A file of the right name in our directory, owned by another user.
    cache = private_dir(tmp_path / "counts")
    plan_in_pieces(config, (1, 1, 1), cache)
    (name,) = os.listdir(cache)
    os.chown(cache / name, NOBODY, NOBODY)
    got, stats = plan_in_pieces(config, (1, 1, 1), cache)
    np.testing.assert_array_equal(got, want)
    assert stats is not None and stats[0] == 0
    assert stats[2] is not None and "not a file of this user" in stats[2]


_DATASET_CHILD = textwrap.dedent(
    """
    import logging, sys
    import streamx
    import streamx.order.epoch as epoch_module
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(message)s")
    epoch_module.COUNT_CACHE_MIN_SAMPLES = 0
    ds = streamx.StreamingDataset(local=sys.argv[1], batch_size=4, shuffle=True, shuffle_seed=3)
    print([int(s["id"]) for s in ds])
    """
)


def test_a_dataset_keeps_its_counts_for_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Through ``StreamingDataset``: a pass keeps the counted draws under the local
    directory, a new process reads them (its debug log says so) and reads the same samples
    in the same order; a dataset under the threshold makes no directory."""
    data = tmp_path / "data"
    with streamx.MDSWriter(out=str(data), columns={"id": "int"}, size_limit=1 << 10) as writer:
        for i in range(700):
            writer.write({"id": i})
    small = tmp_path / "small"
    shutil.copytree(data, small)
    assert [int(s["id"]) for s in streamx.StreamingDataset(local=str(small), batch_size=4)]
    assert not (small / ".streamx" / f"order-{os.getuid()}").exists()

    monkeypatch.setattr(epoch_module, "COUNT_CACHE_MIN_SAMPLES", 0)
    caplog.set_level(logging.DEBUG, logger="streamx")
    ds = streamx.StreamingDataset(local=str(data), batch_size=4, shuffle=True, shuffle_seed=3)
    first = [int(s["id"]) for s in ds]
    assert "1 canonical nodes' draws kept in the count cache" in caplog.text
    counts = data / ".streamx" / f"order-{os.getuid()}"
    (name,) = os.listdir(counts)
    written = (counts / name).stat().st_mtime_ns
    done = subprocess.run(
        [sys.executable, "-c", _DATASET_CHILD, str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 canonical nodes' draws read from the count cache" in done.stderr
    assert "kept in the count cache" not in done.stderr
    assert json.loads(done.stdout) == first
    assert sorted(first) == list(range(700))
    assert (counts / name).stat().st_mtime_ns == written
