"""How the batched-loader tests compare a batch with torch's own: type for type."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["assert_same_batches"]


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
