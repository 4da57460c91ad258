"""``LocalDataset``: a map-style dataset over shards already on local disk."""

from __future__ import annotations

import os
from typing import Any

from streamx.dataset.array import Array
from streamx.dataset.layout import shard_columns
from streamx.dataset.stream import check_safe
from streamx.format.index import INDEX_BASENAME, parse_index
from streamx.format.readers import make_reader
from streamx.runtime.overrides import overridden
from streamx.runtime.torch_bases import TorchDataset

__all__ = ["LocalDataset"]


class LocalDataset(Array, TorchDataset):  # type: ignore[misc,type-arg]
    """A dataset whose shards are all local; it never downloads.

    Args:
        local: The dataset directory holding ``index.json``.
        split: Optional sub-directory of ``local``.
        allow_unsafe_types: Accept columns that run code when decoded (``pkl``); off by
            default, as for :class:`StreamingDataset` (mosaicml-streaming has no such check).

    Raises:
        FileNotFoundError: If ``index.json`` is missing.
        ValueError: If the index is malformed, or a column is unsafe and
            ``allow_unsafe_types`` is False.

    Examples:
        >>> ds = LocalDataset("/data/mds")  # doctest: +SKIP
        >>> ds.columns, len(ds), ds[0]["id"]  # doctest: +SKIP
        ({'id': 'int', 'text': 'str'}, 1000, 0)
    """

    def __init__(
        self, local: str, split: str | None = None, *, allow_unsafe_types: bool = False
    ) -> None:
        split = split or ""
        self.local = local
        self.split = split
        self.shards = parse_index(local, split, os.path.join(local, split, INDEX_BASENAME))
        for shard in self.shards:
            check_safe(shard, allow_unsafe_types)
        self._reader = make_reader(self.shards)
        self.num_samples = self._reader.num_samples
        self._enable_fast_get(LocalDataset, self._reader.fast_get)
        # A subclass that decodes its own samples reads them one by one (its get_item).
        self._batched = not overridden(type(self), LocalDataset, ("get_item", "__getitem__"))

    def __len__(self) -> int:
        return self.num_samples

    @property
    def size(self) -> int:
        """Number of samples."""
        return self.num_samples

    @property
    def columns(self) -> dict[str, str]:
        """Column name -> encoding (``'int'``, ``'str'``, ``'jpeg'``, ...), in index order."""
        return shard_columns(self.shards)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(local={self.local!r}, split={self.split!r}, "
            f"samples={self.num_samples}, shards={len(self.shards)}, columns={self.columns})"
        )

    def get_item(self, sample_id: int) -> dict[str, Any]:
        """Returns the sample with global id ``sample_id``."""
        return self._reader.get(sample_id)

    def _read_many(self, ids: list[int]) -> list[Any] | None:
        return self._reader.get_many(ids, self.get_item) if self._batched else None
