"""``MixedDataset`` over real MDS sources: resume mid-run, in process and through a JSON state,
through DataLoader workers (the state counts what training received, not what the workers
read ahead), with a schedule change at the resume point; and a state from another schedule,
seed, batch or sources refused, naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mixture_data import collate_uids, mixed, uid_only, uids
from torch.utils.data import DataLoader

from streamx import MixedDataset, StreamingDataLoader

POINTS: list[list[Any]] = [[0, {"web": 3, "code": 1}], [6, {"web": 1, "code": 1, "math": 1}]]
CONFIG: dict[str, Any] = {"global_batch_size": 12, "num_steps": 20, "seed": 5}
# The same run, annealed onto 'math' from step 9.
CHANGED = [*POINTS, [9, {"code": 1, "math": 3}]]


def _all(data: MixedDataset) -> list[str]:
    return [data[p]["uid"] for p in range(len(data))]


def _json(state: dict[str, object] | None) -> dict[str, Any]:
    return dict(json.loads(json.dumps(state)))


def test_resume_in_process_and_through_json(sources_dir: Path) -> None:
    full = _all(mixed(sources_dir, POINTS, **CONFIG))
    assert [s["uid"] for s in mixed(sources_dir, POINTS, **CONFIG)] == full
    for stop in (1, 37, 60, 239):
        first = mixed(sources_dir, POINTS, **CONFIG)
        it = iter(first)
        head = [next(it)["uid"] for _ in range(stop)]
        direct = mixed(sources_dir, POINTS, **CONFIG)
        direct.load_state_dict(first.state_dict())
        resumed = mixed(sources_dir, POINTS, **CONFIG)
        resumed.load_state_dict(_json(first.state_dict()))
        assert head + [s["uid"] for s in resumed] == full, stop
        assert head + [s["uid"] for s in direct] == full, stop


@pytest.mark.parametrize(("workers", "then", "batch"), [(2, 0, 12), (3, 2, 5), (0, 2, None)])
def test_resume_through_loader_workers(
    sources_dir: Path, workers: int, then: int, batch: int | None
) -> None:
    full = _all(mixed(sources_dir, POINTS, **CONFIG))

    def loader(data: MixedDataset, n: int) -> StreamingDataLoader:
        ctx = "fork" if n else None
        collate = uid_only if batch is None else collate_uids
        return StreamingDataLoader(
            data, batch_size=batch, num_workers=n, collate_fn=collate, multiprocessing_context=ctx
        )

    data = mixed(sources_dir, POINTS, **CONFIG)
    # The loader's batches are the sequence in order, whatever the worker count.
    assert [u for b in loader(data, workers) for u in uids(b)] == full
    first = loader(mixed(sources_dir, POINTS, **CONFIG), workers)
    head: list[str] = []
    for i, b in enumerate(first, 1):
        head += uids(b)
        if i == 7:  # workers have read ahead: the state must not count that
            break
    state = _json(first.state_dict())
    assert state["position"] == len(head)
    resumed = loader(mixed(sources_dir, POINTS, **CONFIG), then)
    resumed.load_state_dict(state)
    assert head + [u for b in resumed for u in uids(b)] == full


def test_plain_dataloader_through_tracked_batches(sources_dir: Path) -> None:
    full = _all(mixed(sources_dir, POINTS, **CONFIG))
    data = mixed(sources_dir, POINTS, **CONFIG)
    plain = DataLoader(
        data, batch_size=6, num_workers=2, collate_fn=collate_uids, multiprocessing_context="fork"
    )
    head: list[str] = []
    for b in data.tracked_batches(plain):
        head += uids(b)
        if len(head) == 30:
            break
    resumed = mixed(sources_dir, POINTS, **CONFIG)
    resumed.load_state_dict(data.state_dict())
    assert head + [s["uid"] for s in resumed] == full
    with pytest.raises(ValueError, match="another dataset"):
        mixed(sources_dir, POINTS, **CONFIG).tracked_batches(plain)


def test_schedule_change_at_the_resume_point(sources_dir: Path) -> None:
    changed = _all(mixed(sources_dir, CHANGED, **CONFIG))
    assert changed != _all(mixed(sources_dir, POINTS, **CONFIG))
    first = mixed(sources_dir, POINTS, **CONFIG)
    it = iter(first)
    head = [next(it)["uid"] for _ in range(9 * 12)]  # steps 0..8 of the old schedule
    resumed = mixed(sources_dir, CHANGED, **CONFIG)
    resumed.load_state_dict(_json(first.state_dict()))  # accepted: nothing before 9 differs
    assert head + [s["uid"] for s in resumed] == changed
    # A longer run (more steps) resumes from the same state too.
    longer = mixed(sources_dir, CHANGED, **{**CONFIG, "num_steps": 30})
    longer.load_state_dict(_json(first.state_dict()))
    assert [s["uid"] for s in longer][: len(changed) - len(head)] == changed[len(head) :]


def test_foreign_states_are_refused_naming_the_field(sources_dir: Path) -> None:
    first = mixed(sources_dir, POINTS, **CONFIG)
    it = iter(first)
    for _ in range(10 * 12 + 5):  # into step 10: steps 0..10 are touched
        next(it)
    state = _json(first.state_dict())
    with pytest.raises(
        ValueError,
        match=r"'schedule' differs in the 11 steps .*'web' gave 74 samples there and 66 here",
    ):
        mixed(sources_dir, CHANGED, **CONFIG).load_state_dict(state)
    cases = [
        ({**CONFIG, "seed": 6}, "'seed' is 5 there and 6 here"),
        ({**CONFIG, "global_batch_size": 6}, "'global_batch_size'"),
        ({**CONFIG, "shuffle": False}, "'shuffle'"),
        ({**CONFIG, "num_steps": 10}, "'position' 125 is beyond"),
    ]
    for config, match in cases:
        with pytest.raises(ValueError, match=match):
            mixed(sources_dir, POINTS, **config).load_state_dict(state)
    other = mixed(sources_dir, POINTS, **CONFIG)
    other.sources["math"] = other.sources["web"]
    other.lengths[2] = 120
    with pytest.raises(ValueError, match=r"'sources' is .*\['math', 9\]\] there"):
        other.load_state_dict(state)
    reordered = mixed(sources_dir, POINTS, **CONFIG)
    reordered.names.reverse()
    reordered.lengths.reverse()
    with pytest.raises(ValueError, match="'sources'"):
        reordered.load_state_dict(state)
    with pytest.raises(ValueError, match=r"lacks \['position', 'schedule'\]"):
        mixed(sources_dir, POINTS, **CONFIG).load_state_dict({"config": state["config"]})
    # A schedule that differs only from step 11 on is accepted.
    later = mixed(sources_dir, [*POINTS, [11, {"math": 1}]], **CONFIG)
    later.load_state_dict(state)
    assert later.position == 125
