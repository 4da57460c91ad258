"""``kill -9`` of a rank or of a DataLoader worker mid-epoch, then a restart on the same cache.

The first job checkpoints after 3 steps and then loses a process to SIGKILL; the launcher
tears the rest of the job down with SIGKILL too, as torchrun would, so nobody cleans up. The
restart (same ``TORCHELASTIC_RUN_ID`` and ``MASTER_PORT``, same cache directory) must start
at once with no manual step, continue exactly where the checkpoint says, run a normal next
epoch, and leave the cache directory clean behind it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from dist_harness import DS, LOADER, free_port, run_job, runs_left, state_file
from dist_oracle import job_batches

pytest.importorskip("torch")
pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs


@pytest.mark.parametrize(("target", "victim"), [("rank", 0), ("worker", 1)])
def test_kill9_then_restart(
    node_dirs: Callable[..., list[str]], tmp_path: Path, target: str, victim: int
) -> None:
    locals_ = node_dirs(1)
    job = {
        "nodes": 1,
        "ranks_per_node": 2,
        "locals": locals_,
        "dataset": DS,
        "loader": LOADER,
        "sync": True,
        "master_port": free_port(),
        "env": {"TORCHELASTIC_RUN_ID": "crash-test"},
    }
    crashed = run_job(
        tmp_path / "crashed",
        **job,
        passes=[{"state_after": 3}],
        kill={"rank": victim, "after": 6, "target": target},
        collective_timeout=20,
        timeout=90,
    )
    assert not crashed.timed_out, crashed.describe()
    assert crashed.exitcodes[victim] != 0
    assert all(len(crashed.ranks[r]["passes"][0]["batches"]) >= 3 for r in range(2))
    state = crashed.ranks[0]["passes"][0]["state"]
    assert state == crashed.ranks[1]["passes"][0]["state"]
    assert state["sample_in_epoch"] == 3 * 4 * 2
    assert runs_left(locals_), "the crashed job should have left its state behind"

    restart = run_job(
        tmp_path / "restart",
        **job,
        gloo_port=free_port(),  # the old store's port may linger; streamx sees the old one
        load_state=state_file(tmp_path / "state.json", state),
        passes=[{}, {}],
        timeout=90,
    )
    assert restart.ok, restart.describe()
    for data in restart.ranks.values():
        assert data["construct_s"] < 10, data["construct_s"]
        assert data["first_batch_s"] < 30, data["first_batch_s"]

    full = job_batches(crashed.spec, epoch=0)
    tail = job_batches(
        restart.spec, epoch=0, sample_in_epoch=state["sample_in_epoch"], initial_physical_nodes=1
    )
    assert restart.batches(0) == tail
    for rank in range(2):
        head = crashed.ranks[rank]["passes"][0]["batches"][:3]
        assert head == full[rank][:3]
        assert Counter(map(tuple, head + tail[rank])) == Counter(map(tuple, full[rank]))
    assert restart.batches(1) == job_batches(restart.spec, epoch=1)
    assert runs_left(locals_) == []  # the dead job's state was collected, ours removed
