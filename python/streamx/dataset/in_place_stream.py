"""What every stream read in place shares: its units (row groups, tars) come from a
metadata index it builds in ``local``, not from an ``index.json``."""

from __future__ import annotations

import os
from typing import Any, cast

from streamx import _core
from streamx.cache import cache_dir, cached_files
from streamx.cache.local_claims import Claim, claim_local
from streamx.dataset.stream import Stream
from streamx.format.index import ShardList
from streamx.format.lazy_shards import IndexPart
from streamx.format.unit_index import UnitIndex

__all__ = ["InPlaceStream"]


class InPlaceStream(Stream):
    """A stream whose shards are units of files read where they live.

    Subclasses name the file listing their sources (``MANIFEST``), build the units'
    index (:meth:`build_units`) and fetch a unit (``prepare_shard``).
    """

    MANIFEST = ""

    @property
    def index_path(self) -> str:
        """Where the list of source files and their versions lives locally."""
        return os.path.join(self.local, self.split, self.MANIFEST)

    @property
    def source(self) -> str:
        assert self.remote is not None
        return cached_files.remote_url(self.remote, self.split, "").rstrip("/")

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        raise NotImplementedError(f"{self.source}: a source read in place fetches its units")

    def build_units(self, folder: str) -> UnitIndex[Any]:
        """The units of the source, with their metadata cached in ``folder``."""
        raise NotImplementedError

    def get_shards(self, world: Any = None, allow_unsafe_types: bool = False) -> ShardList:
        """Lists the source and reads its metadata (cached), one shard per unit."""
        where = os.path.join(self.local, self.split)
        if getattr(self, "_claim", None) is None:
            cache_dir.prepare(where, self.source)
            self._claim: Claim | None = claim_local(where, self.source)
        index = self.build_units(where)
        return ShardList([IndexPart(cast(_core.ShardIndex, index), self.local, self.split)])
