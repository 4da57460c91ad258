"""``MixedDataset`` across real rank processes (torch.distributed on gloo) with DataLoader
workers: global step ``t`` holds the same samples at every world size and worker count,
and a run stopped on 2 ranks resumes on 3, with a schedule change at the resume point, as
an uninterrupted run of the changed schedule."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mixture_data import mixed
from rank_runs import run_ranks

from streamx import MixedDataset

pytestmark = pytest.mark.dist

RANK_SCRIPT = Path(__file__).with_name("mixed_rank.py")
POINTS: list[list[Any]] = [[0, {"web": 3, "code": 1}], [4, {"web": 1, "code": 1, "math": 1}]]
CONFIG: dict[str, Any] = {"global_batch_size": 12, "num_steps": 12, "seed": 9}


def _steps(data: MixedDataset) -> list[Counter[str]]:
    """Each global step's samples (uids) of the uninterrupted run."""
    b = data.global_batch_size
    return [
        Counter(data[p]["uid"] for p in range(t * b, (t + 1) * b)) for t in range(data.num_steps)
    ]


def _joined(results: list[dict[str, Any]]) -> list[Counter[str]]:
    """Training step ``t``'s samples over all ranks (batch ``t`` of each rank)."""
    steps = max(len(r["sequences"]) for r in results)
    return [
        sum((Counter(r["sequences"][t]) for r in results if t < len(r["sequences"])), Counter())
        for t in range(steps)
    ]


def _check(root: Path, tmp: Path, runs: list[tuple[int, int]]) -> None:
    want = _steps(mixed(root, POINTS, **CONFIG))
    for world, workers in runs:
        got = run_ranks(
            root, world, {**CONFIG, "points": POINTS, "workers": workers}, tmp, None, RANK_SCRIPT
        )
        assert _joined(got) == want, (world, workers)


@pytest.mark.slow
def test_steps_equal_at_world_sizes_and_workers(sources_dir: Path, tmp_path: Path) -> None:
    _check(sources_dir, tmp_path, [(1, 0), (1, 2), (2, 0), (2, 2), (3, 0), (3, 2)])


def test_resume_on_another_world_with_a_schedule_change(sources_dir: Path, tmp_path: Path) -> None:
    changed = [*POINTS, [5, {"code": 1, "math": 2}]]
    want = _steps(mixed(sources_dir, changed, **CONFIG))
    # StreamingDataset sources: their len is a rank's share, their [] takes any sample.
    config = {**CONFIG, "points": POINTS, "workers": 2, "stop": 5, "streaming": True}
    first = run_ranks(sources_dir, 2, config, tmp_path, None, RANK_SCRIPT)
    states = [r["state"] for r in first]
    assert states[0] == states[1]  # ranks in lockstep agree: the state is global
    assert states[0]["position"] == 5 * 12
    state = tmp_path / "state.json"
    state.write_text(json.dumps(MixedDataset.merge_states(states)))
    config = {**CONFIG, "points": changed, "workers": 0, "streaming": True}
    second = run_ranks(sources_dir, 3, config, tmp_path, state, RANK_SCRIPT)
    assert _joined(first) + _joined(second) == want
