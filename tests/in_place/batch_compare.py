"""How the batched-loader tests compare a batch with torch's own: type for type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["assert_batched_equals_per_sample", "assert_resume_matches", "assert_same_batches"]


def assert_same_batches(ours: Any, theirs: Any, where: str = "batch") -> None:
    """Equal type for type (dict order, nesting, dtypes and shapes included)."""
    assert type(ours) is type(theirs), where
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for name in theirs:
            assert_same_batches(ours[name], theirs[name], f"{where}.{name}")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for number, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            assert_same_batches(mine, other, f"{where}[{number}]")
    elif isinstance(theirs, torch.Tensor):
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), where
        assert torch.equal(ours, theirs), where
    elif isinstance(theirs, np.ndarray):
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), where
        assert np.array_equal(ours, theirs), where
    else:
        assert ours == theirs, where


def assert_resume_matches(loader: Callable[[str, bool], Any], key: str, head: int) -> None:
    """A loader stopped after ``head`` batches and resumed from its ``state_dict`` gives
    the uninterrupted epoch's batches, the same on the batched path as per sample.
    ``loader(local, batched)`` builds a fresh one over the cache directory ``local``; ``key``
    holds an id per sample."""
    runs = []
    for batched in (False, True):
        local = f"c{batched}"
        full = list(loader(local, batched))
        stopped = loader(local, batched)
        first: list[Any] = []
        for batch in stopped:
            first.append(batch)
            if len(first) == head:
                break
        state = stopped.state_dict()
        resumed = loader(local, batched)
        resumed.load_state_dict(state)
        rest = list(resumed)
        assert_same_batches(first, full[:head])
        ids = [i for batch in first + rest for i in batch[key].tolist()]
        assert sorted(ids) == sorted(i for b in full for i in b[key].tolist())
        runs.append((full, first + rest, state))
    assert_same_batches(runs[1][0], runs[0][0])
    assert_same_batches(runs[1][1], runs[0][1])
    assert runs[1][2] == runs[0][2]


def assert_batched_equals_per_sample(
    dataset: Callable[[str], Any],
    loader: Callable[..., Any],
    *,
    key: str,
    count: int,
    workers: int,
    drop_last: bool,
    context: str | None,
) -> dict[str, Any]:
    """The batched path's epochs equal the per-sample path's under ``default_collate``, and
    returns the batched path's first batch for the format's own type checks.

    ``dataset(local)`` builds the dataset over a fresh cache directory; ``loader(ds, workers,
    batched, drop_last=, context=)`` its loader of batches of 8. ``key`` holds each sample's
    id, ``0..count``. A spawned worker gets the dataset by pickle, with a reader already open
    here; a second epoch (forked workers only) reshuffles."""
    per_sample = loader(dataset("a"), workers, False, drop_last=drop_last)
    epochs = 1 if context == "spawn" else 2
    expected = [list(per_sample) for _ in range(epochs)]
    ds = dataset("b")
    assert ds._sample_access().get_columns is not None
    assert ds[0][key] == 0  # a reader open here, before the workers start
    batched = loader(ds, workers, True, drop_last=drop_last, context=context)
    assert batched._batched and not batched._inline()  # the workers read batches by field
    got = [list(batched) for _ in range(epochs)]
    assert_same_batches(got, expected)
    ids = [i for batch in got[0] for i in batch[key].tolist()]
    assert ids != sorted(ids) and set(ids) <= set(range(count))
    if drop_last:
        assert all(len(b[key]) == 8 for b in got[0]) and len(set(ids)) < count
    else:
        assert sorted(ids) == list(range(count))
    first: dict[str, Any] = got[0][0]
    # Workers send numpy arrays, which become tensors here: no shared-memory segment each.
    assert not first[key].is_shared() and expected[0][0][key].is_shared() == bool(workers)
    return first
