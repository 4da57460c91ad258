"""Independent jobs sharing one cache directory at the same time.

mosaicml-streaming refuses this ("Reused local directory", issue #306) or, with its shared
memory prefix scan, races. Here two 2-rank jobs and a single-process job run at once on the
same directory, with different seeds, one of them resuming mid-epoch: each must get exactly
its own order. A rendezvous makes sure all of them exist before any starts iterating.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dist_harness import DS, LOADER, Job, make_spec, runs_left, state_file
from dist_oracle import job_batches

pytest.importorskip("torch")
pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs


def test_jobs_share_a_cache_directory(node_dirs: Callable[..., list[str]], tmp_path: Path) -> None:
    local = node_dirs(1)[0]
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    everyone = ["a.r0", "a.r1", "b.r0", "b.r1", "c.r0"]
    state = {
        "epoch": 0,
        "sample_in_epoch": 40,
        "num_canonical_nodes": 1,
        "shuffle_seed": 2,
        "initial_physical_nodes": 1,
    }
    state_path = state_file(tmp_path / "state.json", state)
    seeds = {"a": 1, "b": 2, "c": 3}
    jobs = {}
    for name in seeds:
        extra = {"load_state": state_path} if name == "b" else {}
        world = {"single": True} if name == "c" else {"nodes": 1, "ranks_per_node": 2}
        jobs[name] = Job(
            make_spec(
                tmp_path / name,
                **world,
                **extra,
                locals=[local],
                dataset={**DS, "shuffle_seed": seeds[name]},
                loader=LOADER,
                passes=[{}, {}],
                rendezvous={"dir": str(rendezvous), "name": name, "wait_for": everyone},
                timeout=150,
            )
        )
    results = {name: job.wait() for name, job in jobs.items()}
    for name, result in results.items():
        assert result.ok, f"job {name}: {result.describe()}"

    for name in ("a", "c"):
        assert results[name].batches(0) == job_batches(results[name].spec, epoch=0)
        assert results[name].batches(1) == job_batches(results[name].spec, epoch=1)
    b = results["b"]
    resume = {"sample_in_epoch": state["sample_in_epoch"], "initial_physical_nodes": 1}
    assert b.batches(0) == job_batches(b.spec, epoch=0, **resume)
    assert b.batches(1) == job_batches(b.spec, epoch=1)
    assert results["a"].batches(0) != results["b"].batches(0)
    assert runs_left([local]) == []
