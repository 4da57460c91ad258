"""Numpy-style indexing (int, negative int, slice, list, ndarray) over ``get_item``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from streamx.runtime.overrides import overridden

__all__ = ["Array"]


class Array:
    """A read-only sequence indexed like a numpy array.

    Subclasses provide :attr:`size` and :meth:`get_item`; ``__getitem__`` routes every
    index form to ``get_item`` so that subclass overrides of it apply everywhere.
    """

    # ``ds[i]`` for a plain int, in one call into Rust; set by ``_enable_fast_get`` only
    # when it is equivalent to ``get_item`` (nothing overridden, nothing decoded in Python).
    _fast_get: Callable[[int], Any | None] | None = None

    def _enable_fast_get(
        self, owner: type[Array], fast: Callable[[int], Any | None] | None
    ) -> None:
        """Uses ``fast(i)`` (negative ``i`` allowed, ``IndexError`` past the end, ``None``
        while the sample's shard is not local) for int indices, unless a subclass of
        ``owner`` overrides ``get_item`` or ``size``."""
        if fast is not None and not overridden(type(self), owner, ("get_item", "size")):
            self._fast_get = fast

    @property
    def size(self) -> int:
        """Number of items."""
        raise NotImplementedError

    def _read_many(self, ids: list[int]) -> list[Any] | None:
        """The items at ``ids`` (each in ``range(size)``) in one call into Rust, or ``None``
        where that would bypass a subclass's own ``get_item`` or ``__getitem__``."""
        return None

    def __getitems__(self, indices: Sequence[Any]) -> list[Any]:
        """``[self[i] for i in indices]``, in one call into Rust where nothing is overridden:
        the way torch's ``DataLoader`` asks a map-style dataset for a batch, and a packer for
        its window of documents.

        Raises:
            IndexError: If an index is out of range (naming it).
        """
        ids: list[int] = []
        size = self.size
        for at in indices:
            if not isinstance(at, (int, np.integer)):
                return [self[at] for at in indices]  # slices, lists: the general path
            idx = int(at) + size if int(at) < 0 else int(at)
            if not 0 <= idx < size:
                raise IndexError(f"Sample index {at} out of range for {size} samples")
            ids.append(idx)
        items = self._read_many(ids)
        return items if items is not None else [self[i] for i in ids]

    def get_item(self, idx: int) -> Any:
        """Returns the item at ``0 <= idx < size``."""
        raise NotImplementedError

    def __getitem__(self, at: Any) -> Any:
        fast = self._fast_get
        if fast is not None and type(at) is int:
            try:
                sample = fast(at)
            except OverflowError:
                sample = None  # beyond int64: the general path below says so
            if sample is not None:
                return sample  # else not local yet: the general path fetches it
        if isinstance(at, (int, np.integer)):
            idx, size = int(at), self.size
            if idx < 0:
                idx += size
            if not 0 <= idx < size:
                raise IndexError(f"Sample index {at} out of range for {size} samples")
            return self.get_item(idx)
        if isinstance(at, slice):
            return [self.get_item(i) for i in range(*at.indices(self.size))]
        if isinstance(at, (list, tuple, np.ndarray)):
            return [self[sub] for sub in at]
        raise TypeError(
            f"Sample index must be an int, slice, list or ndarray, not {type(at).__name__}"
        )
