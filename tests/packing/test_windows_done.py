"""The packed epoch's done windows (``streamx.packing.windows_done``): runs and per-consumer
counts that answer exactly as a plain set of window ids does, and that stay a few entries
long where a set would hold every window."""

from __future__ import annotations

import json
import random

import pytest

from streamx.packing.windows_done import Progress, Runs


def _windows(runs: list[tuple[int, int]]) -> set[int]:
    return {w for start, end in runs for w in range(start, end)}


def test_runs_merge_and_count_the_windows_outside() -> None:
    runs = Runs([(5, 7), (0, 2), (2, 3), (10, 12), (12, 12)])
    assert runs.pairs() == [(0, 3), (5, 7), (10, 12)]
    assert len(runs) == 7
    outside = [w for w in range(20) if w not in runs]
    assert outside == [3, 4, 7, 8, 9, *range(12, 20)]
    assert [runs.outside_at(p) for p in range(len(outside))] == outside
    assert [runs.position_outside(w) for w in outside] == list(range(len(outside)))


@pytest.mark.parametrize("seed", range(12))
def test_a_deal_answers_as_a_set_of_windows_does(seed: int) -> None:
    """Random runs before the pass, random consumer counts, each consumer finishing its turns
    in order at its own pace (and now and then a window out of turn), a consumer count that
    changes mid-epoch: every question gets the model's answer, through JSON too."""
    rng = random.Random(seed)
    total = rng.randrange(1, 400)
    model = {w for w in range(total) if rng.random() < 0.3}
    progress = Progress(runs=Runs((w, w + 1) for w in model))
    for _ in range(3):
        consumers = rng.randrange(1, 9)
        progress.deal(consumers)
        turns = {c: list(progress.turns(c, total)) for c in range(consumers)}
        todo = sorted(set(range(total)) - model)
        # The deal covers the unfinished windows once each, round-robin.
        assert sorted(w for ws in turns.values() for w in ws) == todo
        for ws in turns.values():
            for w in ws[: rng.randrange(len(ws) + 1)]:
                progress.finish(w)
                model.add(w)
        for w in rng.sample(todo, min(2, len(todo))):  # out of turn: kept aside
            progress.finish(w)
            model.add(w)
        assert all(progress.is_done(w) == (w in model) for w in range(total))
        assert _windows(progress.fold().pairs()) == model
        assert progress.last() == max(model, default=-1)
        loaded = Progress.of_state(json.loads(json.dumps(progress.state())))
        assert _windows(loaded.fold().pairs()) == model
        assert all(loaded.is_done(w) == (w in model) for w in range(total))


def test_ranks_states_merge_into_one_run_and_a_few_windows() -> None:
    """64 consumers (8 ranks x 8 workers) at 10^7 windows (10^10 documents in windows of
    1,024), each a little ahead of or behind the others: every rank's state dict and the
    merged one stay a few hundred bytes, and the merge is exactly the windows finished."""
    consumers, total = 64, 10**7
    rng = random.Random(5)
    finished = {c: 150_000 + rng.randrange(3) for c in range(consumers)}
    states = []
    for rank in range(8):
        mine = {c: finished[c] for c in range(rank * 8, rank * 8 + 8)}
        states.append(Progress(consumers=consumers, finished=mine).state())
    assert all(len(json.dumps(s)) < 400 for s in states)
    merged = Progress.merged([Progress.of_state(json.loads(json.dumps(s))) for s in states])
    runs = merged.fold().pairs()
    least = min(finished.values())
    extra = {c + t * consumers for c, n in finished.items() for t in range(least, n)}
    assert runs == Runs([(0, least * consumers), *((w, w + 1) for w in extra)]).pairs()
    assert len(runs) <= 1 + len(extra) < 100
    assert len(json.dumps(merged.state())) < 2_000
    # The next pass, at another consumer count, deals exactly what is left.
    merged.deal(2)
    first = next(merged.turns(0, total))
    assert first == min(set(range(least * consumers, least * consumers + 200)) - extra)


def test_older_and_bad_state_entries() -> None:
    older = Progress.of_state({"done": [0, 1, 2, 7]})  # window ids, before the runs
    assert older.fold().pairs() == [(0, 3), (7, 8)]
    with pytest.raises(ValueError, match="'done' entry must be"):
        Progress.of_state({"done": [[1, 2, 3]]})
    with pytest.raises(ValueError, match="'done' must be a list"):
        Progress.of_state({"done": "0-9"})
    with pytest.raises(ValueError, match="consumer 9 with 1 windows, outside 4 consumers"):
        Progress.of_state({"done": [], "dealt": {"consumers": 4, "finished": {"9": 1}}})
    with pytest.raises(ValueError, match="consumers must be >= 1"):
        Progress.of_state({"done": [], "dealt": {"consumers": 0, "finished": {}}})
