"""How the batched-loader tests compare a batch with torch's own: type for type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["assert_resume_matches", "assert_same_batches"]


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
