"""A ``MixedDataset`` as the documents of ``PackedDataset`` (``shuffle=False`` keeps the mixed
order): every token of the mixture packed once, resume with a schedule change at the resume
point, a foreign schedule refused through the packed state, and kill -9 resume walks (real
``StreamingDataset`` sources, real processes, DataLoader workers) with 0 tokens duplicated
and 0 missing against the uninterrupted run of the final schedule."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mixture_data import mixed

from streamx import PackedDataset

WALK_SCRIPT = Path(__file__).with_name("mixed_walk.py")
POINTS: list[list[Any]] = [[0, {"web": 3, "code": 1}], [5, {"web": 1, "code": 1, "math": 1}]]
MIXTURE: dict[str, Any] = {"global_batch_size": 12, "num_steps": 12, "seed": 2}
PACKING: dict[str, Any] = {"seq_len": 256, "mode": "concat", "eos_id": 0, "buffer_size": 12}
Key = tuple[int, ...]


def _packed(root: Path, points: list[list[Any]], **mixture: Any) -> PackedDataset:
    return PackedDataset(mixed(root, points, **{**MIXTURE, **mixture}), **PACKING)


def _key(seq: dict[str, Any]) -> Key:
    return tuple(seq["input_ids"][: int(seq["num_tokens"])].tolist())


def test_packing_covers_every_mixed_token_in_order(sources_dir: Path) -> None:
    data = mixed(sources_dir, POINTS, **MIXTURE)
    want = np.concatenate([np.append(data[p]["tokens"], 0) for p in range(len(data))])
    got = [t for s in PackedDataset(data, **{**PACKING, "buffer_size": 10_000}) for t in _key(s)]
    assert got == want.tolist()


def test_packed_resume_with_a_schedule_change(sources_dir: Path) -> None:
    first = _packed(sources_dir, POINTS)
    it = iter(first)
    head = [_key(next(it)) for _ in range(20)]
    state = json.loads(json.dumps(first.state_dict()))
    steps = state["documents"]["schedule"]["steps"]  # the first step no document came from
    changed = [*POINTS, [steps, {"math": 1}]]
    resumed = _packed(sources_dir, changed)
    resumed.load_state_dict(state)
    assert head + [_key(s) for s in resumed] == [_key(s) for s in _packed(sources_dir, changed)]
    # One step earlier, the change would alter documents already packed: refused.
    early = [*POINTS, [steps - 1, {"math": 1}]]
    with pytest.raises(ValueError, match="'schedule' differs"):
        _packed(sources_dir, early).load_state_dict(state)
    with pytest.raises(ValueError, match="'seed'"):
        _packed(sources_dir, POINTS, seed=3).load_state_dict(state)


def _last_step(ckpt: Path) -> int:
    steps = [int(p.name[4:-5]) for p in ckpt.glob("step*.json")]
    return max(steps, default=0)


def _segment(spec: dict[str, Any], out: Path, kill_after: int | None, rng: random.Random) -> None:
    """Runs one job; with ``kill_after``, SIGKILLs its process group once it has committed
    that many more steps (plus a random pause, to land mid-step)."""
    path = out / "spec.json"
    path.write_text(json.dumps(spec))
    ckpt = Path(spec["ckpt"])
    start = _last_step(ckpt)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WALK_SCRIPT.parent), *sys.path])}
    with (out / "log.txt").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(WALK_SCRIPT), str(path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            if kill_after is None:
                assert proc.wait(timeout=240) == 0, (out / "log.txt").read_text()
                return
            deadline = time.monotonic() + 240
            while _last_step(ckpt) < start + kill_after and proc.poll() is None:
                assert time.monotonic() < deadline, "the job made no progress"
                time.sleep(0.01)
            time.sleep(rng.uniform(0, spec["step_s"] * 2))
            assert proc.poll() is None, "the job ended before its kill"
            os.killpg(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _walk(root: Path, tmp: Path, kills: int, seed: int, mixture: dict[str, Any]) -> None:
    rng = random.Random(seed)
    ckpt = tmp / "ckpt"
    points = list(POINTS)
    spec: dict[str, Any] = {
        "root": str(root),
        "ckpt": str(ckpt),
        "points": points,
        "mixture": {**MIXTURE, **mixture},
        "packing": PACKING,
        "step_s": 0.02,
        "load_state": None,
    }
    change_at = kills // 2  # the resume where the schedule changes
    for k in range(kills + 1):
        spec["workers"] = rng.choice([0, 2])
        last = _last_step(ckpt)
        if last:
            spec["load_state"] = str(ckpt / f"step{last:06d}.json")
        if k == change_at and last:
            state = json.loads(Path(spec["load_state"]).read_text())["state"]
            first_free = state["documents"]["schedule"]["steps"]
            assert first_free < spec["mixture"]["num_steps"]  # the change reaches the data
            spec["points"] = [*points, [first_free, {"code": 1, "math": 3}]]
        out = tmp / f"seg{k}"
        out.mkdir()
        _segment(spec, out, rng.randint(1, 4) if k < kills else None, rng)
    assert (ckpt / "done.json").exists()
    steps = json.loads((ckpt / "done.json").read_text())["steps"]
    got = Counter(
        tuple(json.loads((ckpt / f"step{t:06d}.json").read_text())["tokens"])
        for t in range(1, steps + 1)
    )
    final = PackedDataset(mixed(root, spec["points"], **spec["mixture"]), **PACKING)
    want = Counter(_key(s) for s in final)
    duplicated, missing = sum((got - want).values()), sum((want - got).values())
    assert (duplicated, missing) == (0, 0)
    assert sum(len(k) * n for k, n in got.items()) == sum(len(k) * n for k, n in want.items())
    assert len(spec["points"]) == len(POINTS) + 1  # the schedule did change on the way
    unchanged = PackedDataset(mixed(root, POINTS, **spec["mixture"]), **PACKING)
    assert Counter(_key(s) for s in unchanged) != want


@pytest.mark.timeout(600)
def test_kill_walk_with_a_schedule_change(sources_dir: Path, tmp_path: Path) -> None:
    _walk(sources_dir, tmp_path, kills=3, seed=1, mixture={})


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_long_kill_walk_with_a_schedule_change(sources_dir: Path, tmp_path: Path) -> None:
    _walk(sources_dir, tmp_path, kills=16, seed=2, mixture={"num_steps": 60})
