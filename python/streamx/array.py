"""Numpy-style indexing (int, negative int, slice, list, ndarray) over ``get_item``."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Array"]


class Array:
    """A read-only sequence indexed like a numpy array.

    Subclasses provide :attr:`size` and :meth:`get_item`; ``__getitem__`` routes every
    index form to ``get_item`` so that subclass overrides of it apply everywhere.
    """

    @property
    def size(self) -> int:
        """Number of items."""
        raise NotImplementedError

    def get_item(self, idx: int) -> Any:
        """Returns the item at ``0 <= idx < size``."""
        raise NotImplementedError

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, (int, np.integer)):
            idx = int(at)
            if idx < 0:
                idx += self.size
            if not 0 <= idx < self.size:
                raise IndexError(f"Sample index {at} out of range for {self.size} samples")
            return self.get_item(idx)
        if isinstance(at, slice):
            return [self.get_item(i) for i in range(*at.indices(self.size))]
        if isinstance(at, (list, tuple, np.ndarray)):
            return [self[sub] for sub in at]
        raise TypeError(f"Sample index must be an int, slice, list or ndarray, not {type(at).__name__}")
