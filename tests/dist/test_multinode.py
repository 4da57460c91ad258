"""Real rank processes on simulated nodes: per-rank order equals mosaicml-streaming's.

Each test launches a job of forked rank processes (see ``dist_launch.py``) with real
DataLoader workers, then compares every rank's batches with mosaicml-streaming's
``generate_work`` for the same world, replayed through the DataLoader's round-robin.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from dist_harness import DS, LOADER, NUM_SAMPLES, JobResult, run_job, runs_left, state_file
from dist_oracle import flat, job_batches

pytest.importorskip("torch")
pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs

TWO_NODE_DS = {**DS, "num_canonical_nodes": 2}


def _check_epoch(result: JobResult, epoch: int) -> list[list[list[int]]]:
    """Pass ``epoch`` of the job is mosaicml-streaming's epoch ``epoch``, rank by rank."""
    expected = job_batches(result.spec, epoch=epoch)
    got = result.batches(epoch)
    for rank, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
        assert ours == theirs, f"rank {rank} pass {epoch} differs from mosaicml-streaming"
    return expected


def test_two_nodes_two_ranks_two_workers(node_dirs: Callable[..., list[str]]) -> None:
    """2 nodes x 2 ranks x 2 fork workers, one cache dir per node, persistent workers, 2 epochs."""
    locals_ = node_dirs(2)
    result = run_job(
        Path(locals_[0]).parent / "job",
        nodes=2,
        ranks_per_node=2,
        locals=locals_,
        dataset=TWO_NODE_DS,
        loader={**LOADER, "persistent_workers": True},
        passes=[{}, {}],
        sync=True,
    )
    assert result.ok, result.describe()
    for epoch in range(2):
        expected = _check_epoch(result, epoch)
        seen = flat(result.batches(epoch))
        assert seen == flat(expected)
        assert set(seen) == set(range(NUM_SAMPLES))  # every sample, padding repeats only
        assert sum(seen.values()) == 4 * math.ceil(NUM_SAMPLES / 4)
    assert result.batches(0) != result.batches(1)  # epochs reshuffle
    for data in result.ranks.values():
        assert data["len"] == math.ceil(NUM_SAMPLES / 4)
        assert sum(len(b) for b in data["passes"][0]["batches"]) == data["len"]
        assert data["next_epoch"] == 2
        assert len(set(map(tuple, data["all_batch_counts"]))) == 1, "batch counts differ by rank"
    assert runs_left(locals_) == []  # every dataset closed: no state left behind


def test_spawn_persistent_workers(node_dirs: Callable[..., list[str]]) -> None:
    """spawn DataLoader workers, persistent across two epochs, two ranks on one node."""
    locals_ = node_dirs(1)
    result = run_job(
        Path(locals_[0]).parent / "job",
        nodes=1,
        ranks_per_node=2,
        locals=locals_,
        dataset=DS,
        loader={**LOADER, "multiprocessing_context": "spawn", "persistent_workers": True},
        passes=[{}, {}],
        sync=True,
        timeout=240,
    )
    assert result.ok, result.describe()
    for epoch in range(2):
        _check_epoch(result, epoch)


def test_uneven_workers_and_idle_rank(node_dirs: Callable[..., list[str]]) -> None:
    """Ranks with 1 and 3 workers, and a rank that never iterates: nobody waits for anybody.

    mosaicml-streaming hangs here (its per-node barrier counts every worker of every rank;
    issue #617). Each iterating rank must get exactly its own share, in mosaic's order.
    """
    locals_ = node_dirs(1)
    workers = [1, 3, 2]
    result = run_job(
        Path(locals_[0]).parent / "job",
        nodes=1,
        ranks_per_node=3,
        locals=locals_,
        dataset=DS,
        loader={"multiprocessing_context": "fork"},
        per_rank={str(r): {"num_workers": w} for r, w in enumerate(workers)},
        idle_ranks=[2],
        timeout=90,
    )
    assert result.ok, result.describe()
    expected = job_batches(result.spec, epoch=0)
    assert result.ranks[2]["passes"] == []
    got = [result.ranks[r]["passes"][0]["batches"] for r in (0, 1)]
    assert got == expected[:2]
    assert len(got[0]) == len(got[1])  # equal batch counts despite different worker counts
    assert set(flat(got) + flat(expected[2:])) == set(range(NUM_SAMPLES))


def test_replication(node_dirs: Callable[..., list[str]], tmp_path: Path) -> None:
    """replication=2 on 4 ranks: pairs of ranks see the same samples; resume keeps pairs."""
    locals_ = node_dirs(1)
    job = {
        "nodes": 1,
        "ranks_per_node": 4,
        "locals": locals_,
        "dataset": {**DS, "replication": 2},
        "loader": LOADER,
        "sync": True,
    }
    head = run_job(tmp_path / "head", **job, passes=[{"state_after": 5, "limit": 5}])
    assert head.ok, head.describe()
    full = job_batches(head.spec, epoch=0)
    assert full[0] == full[1] and full[2] == full[3] and full[0] != full[2]
    assert head.batches(0) == [b[:5] for b in full]
    states = [head.ranks[r]["passes"][0]["state"] for r in range(4)]
    assert all(s == states[0] for s in states)
    assert states[0]["sample_in_epoch"] == 5 * 4 * 4 // 2  # batches x batch x ranks / replication
    tail = run_job(
        tmp_path / "tail", **job, load_state=state_file(tmp_path / "state.json", states[0])
    )
    assert tail.ok, tail.describe()
    for rank in range(4):
        assert Counter(map(tuple, head.batches(0)[rank] + tail.batches(0)[rank])) == Counter(
            map(tuple, full[rank])
        )
    assert tail.batches(0) == job_batches(
        tail.spec, epoch=0, sample_in_epoch=states[0]["sample_in_epoch"],
        initial_physical_nodes=states[0]["initial_physical_nodes"],
    )  # fmt: skip
