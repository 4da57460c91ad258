"""What the shard cache reads from a dataset, named as Protocols.

The dataset floor builds the streams and the layout and hands them down; the cache reads
them only through these views, so it never imports the dataset (:class:`streamx.Stream`
and :class:`streamx.dataset.layout.DatasetLayout` satisfy them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from streamx.format.index import ShardInfo, ShardList

__all__ = ["CacheLayout", "CachedStream"]


class CachedStream(Protocol):
    """One stream, as its shards are fetched, checked and evicted."""

    @property
    def remote(self) -> str | None: ...

    @property
    def local(self) -> str: ...

    @property
    def split(self) -> str: ...

    @property
    def safe_keep_zip(self) -> bool: ...

    @property
    def validate_hash(self) -> str | None: ...

    @property
    def copies_into_cache(self) -> bool: ...

    @property
    def index_path(self) -> str: ...

    def get_index_size(self) -> int: ...

    def prepare_shard(self, shard: ShardInfo) -> int: ...


class CacheLayout(Protocol):
    """A dataset's streams and shards, frozen once loaded."""

    @property
    def streams(self) -> Sequence[CachedStream]: ...

    @property
    def shards(self) -> ShardList: ...

    @property
    def local_dirs(self) -> Sequence[str]: ...

    @property
    def stream_per_shard(self) -> NDArray[np.int64]: ...

    @property
    def samples_per_shard(self) -> NDArray[np.int64]: ...

    @property
    def sample_offset_per_shard(self) -> NDArray[np.int64]: ...

    @property
    def fetches_own_way(self) -> Sequence[bool]: ...

    def shard_range(self, stream_id: int) -> range: ...
