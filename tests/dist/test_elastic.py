"""Elastic mid-epoch resumption with real rank processes: 4 ranks to 2, and 2 ranks to 3.

A job runs ``k`` steps and checkpoints (every rank's ``StreamingDataLoader.state_dict()``
must agree), then a job with another world shape (same ``num_canonical_nodes``, same global
batch size) loads that state and finishes the epoch. The ids before the checkpoint plus the
ids after the resume must equal an uninterrupted epoch as multisets, and also global step by
global step (each step's ids over all ranks), which is what elastic determinism promises.
The resumed job must also match mosaicml-streaming's order for its own world, and its next
epoch must be the uninterrupted epoch 1 of that world.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dist_harness import JobResult, run_job, state_file
from dist_oracle import flat, global_steps, job_batches

pytest.importorskip("torch")
pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs

BASE = {"shuffle": True, "shuffle_block_size": 256, "num_canonical_nodes": 2}


def _run(out: Path, locals_: list[str], world: dict[str, Any], **extra: Any) -> JobResult:
    """A job on ``world`` (nodes, ranks_per_node, workers and batch_size)."""
    return run_job(
        out,
        nodes=world["nodes"],
        ranks_per_node=world["ranks_per_node"],
        locals=locals_[: world["nodes"]],
        dataset={**BASE, "batch_size": world["batch_size"]},
        loader={"multiprocessing_context": "fork", "num_workers": world["workers"]},
        sync=True,
        **extra,
    )


def _elastic(
    tmp_path: Path,
    locals_: list[str],
    before: dict[str, Any],
    after: dict[str, Any],
    steps: int,
) -> None:
    ranks_a = before["nodes"] * before["ranks_per_node"]
    ranks_b = after["nodes"] * after["ranks_per_node"]
    assert ranks_a * before["batch_size"] == ranks_b * after["batch_size"]  # same global batch
    head = _run(
        tmp_path / "before", locals_, before, passes=[{"state_after": steps, "limit": steps}]
    )
    assert head.ok, head.describe()
    states = [head.ranks[r]["passes"][0]["state"] for r in range(ranks_a)]
    assert all(s == states[0] for s in states), states
    state = states[0]
    assert state["epoch"] == 0
    assert state["sample_in_epoch"] == steps * ranks_a * before["batch_size"]
    assert state["initial_physical_nodes"] == before["nodes"]
    load_state = state_file(tmp_path / "state.json", state)
    tail = _run(tmp_path / "after", locals_, after, load_state=load_state, passes=[{}, {}])
    assert tail.ok, tail.describe()

    full = job_batches(head.spec, epoch=0)
    assert head.batches(0) == [b[:steps] for b in full]
    resume = {k: state[k] for k in ("sample_in_epoch", "initial_physical_nodes")}
    # mosaicml-streaming's continuation, per rank.
    assert tail.batches(0) == job_batches(tail.spec, epoch=0, **resume)
    # Exactness: before + after == uninterrupted, as a multiset and step by step.
    assert flat(head.batches(0)) + flat(tail.batches(0)) == flat(full)
    resumed_steps = global_steps(head.batches(0)) + global_steps(tail.batches(0))
    assert resumed_steps == global_steps(full)
    # The epoch after the resumed one is a normal epoch 1 of the new world.
    next_epoch = job_batches(
        tail.spec, epoch=1, initial_physical_nodes=state["initial_physical_nodes"]
    )
    assert tail.batches(1) == next_epoch
    for data in tail.ranks.values():
        assert data["next_epoch"] == 2
        assert data["final_state"]["epoch"] == 1


def test_resume_four_ranks_on_two(node_dirs: Callable[..., list[str]], tmp_path: Path) -> None:
    """2 nodes x 2 ranks x 2 workers (batch 4) -> 2 nodes x 1 rank x 3 workers (batch 8)."""
    _elastic(
        tmp_path,
        node_dirs(2),
        {"nodes": 2, "ranks_per_node": 2, "workers": 2, "batch_size": 4},
        {"nodes": 2, "ranks_per_node": 1, "workers": 3, "batch_size": 8},
        steps=7,
    )


def test_resume_two_ranks_on_three(node_dirs: Callable[..., list[str]], tmp_path: Path) -> None:
    """2 nodes (batch 6) -> 3 nodes (batch 4): 3 does not divide ncn=2, so the relaxed
    partition rebuilds the 2-node order from ``initial_physical_nodes``."""
    _elastic(
        tmp_path,
        node_dirs(3),
        {"nodes": 2, "ranks_per_node": 1, "workers": 2, "batch_size": 6},
        {"nodes": 3, "ranks_per_node": 1, "workers": 2, "batch_size": 4},
        steps=9,
    )
