"""``LocalDataset``: a map-style dataset over shards already on local disk."""

from __future__ import annotations

import os
from typing import Any

from streamx.dataset.array import Array
from streamx.format.index import INDEX_BASENAME, parse_index
from streamx.format.readers import make_reader
from streamx.torch.compat import TorchDataset

__all__ = ["LocalDataset"]


class LocalDataset(Array, TorchDataset):  # type: ignore[misc,type-arg]
    """A dataset whose shards are all local; it never downloads.

    Args:
        local: The dataset directory holding ``index.json``.
        split: Optional sub-directory of ``local``.
    """

    def __init__(self, local: str, split: str | None = None) -> None:
        split = split or ""
        self.local = local
        self.split = split
        self.shards = parse_index(local, split, os.path.join(local, split, INDEX_BASENAME))
        self._reader = make_reader(self.shards)
        self.num_samples = self._reader.num_samples
        self._enable_fast_get(LocalDataset, self._reader.fast_get)

    def __len__(self) -> int:
        return self.num_samples

    @property
    def size(self) -> int:
        """Number of samples."""
        return self.num_samples

    def get_item(self, sample_id: int) -> dict[str, Any]:
        """Returns the sample with global id ``sample_id``."""
        return self._reader.get(sample_id)
