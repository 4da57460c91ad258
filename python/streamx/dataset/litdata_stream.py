"""``LitDataStream``: a dataset written by ``litdata.optimize``, read in place."""

from __future__ import annotations

from typing import Any

from streamx.cache.cached_files import stale_size
from streamx.dataset.in_place_stream import InPlaceStream
from streamx.exceptions import SizeMismatchError
from streamx.format.index import ShardInfo
from streamx.format.litdata.chunk import fetch_chunk
from streamx.format.litdata.index import MANIFEST, LitDataIndex, build_index

__all__ = ["LitDataStream"]


class LitDataStream(InPlaceStream):
    """A LitData optimized dataset (its ``index.json`` and chunk files, local or remote),
    read where it lives, one shard per chunk.

    The epoch order, partitions, resumption, ``cache_limit`` and eviction treat a chunk as
    they treat an MDS shard of as many samples, so a LitData dataset mixes with MDS streams
    and resumes across world sizes. Samples come back with the structure they were written
    with (a dict, list or tuple), numbers and strings as Python values, numpy leaves as
    arrays, tensors as torch tensors, PIL and JPEG leaves as PIL images.

    Read: LitData's default ``PyTreeLoader`` chunks, uncompressed and unencrypted, with the
    leaf formats ``str``, ``text``, ``int``, ``float``, ``bool``, ``bytes``, ``numpy``,
    ``tensor`` (with or without header), ``pil``, ``jpeg`` and, when allowed, ``pickle``.
    Anything else is refused when the dataset is built, naming it.

    A remote chunk of at least 4 MiB whose samples hold their leaves serves its first
    samples by range while it downloads, as an MDS shard does
    (:mod:`~streamx.cache.range_reads`); a chunk whose rows live in its Arrow footer is
    read once it has arrived whole.

    Args:
        remote: The dataset's directory (holding ``index.json``), as a path or URL.
        local: Cache directory (``None``: a private one derived from ``remote``).
        allow_pickle: Read leaves LitData serialized with ``pickle`` (which runs code).
        **kwargs: ``split``, ``proportion``, ``repeat``, ``choose``, ``download_retry``,
            ``download_timeout``, as for :class:`Stream`.
    """

    MANIFEST = MANIFEST

    def __init__(
        self,
        *,
        remote: str,
        local: str | None = None,
        allow_pickle: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("validate_hash"):
            raise ValueError("`validate_hash` does not apply to LitData sources")
        super().__init__(remote=remote, local=local, **kwargs)
        self.allow_pickle = allow_pickle

    def build_units(self, folder: str) -> LitDataIndex:
        """Reads the dataset's ``index.json`` (checking what it uses), one unit per chunk.

        Raises:
            FileNotFoundError: If there is no ``index.json``.
            CorruptIndexError: If it is not LitData's index.
            ValueError: If it uses a format, loader, compression or encryption not read in
                place, naming it.
        """
        return build_index(
            self.source,
            folder,
            float(self.download_timeout),
            int(self.download_retry),
            self.allow_pickle,
        )

    def prepare_shard(self, shard: ShardInfo) -> int:
        """Fetches the whole chunk into its local file.

        Raises:
            StaleIndexError: If the remote chunk's size is not the one its index gives.
        """
        try:
            return fetch_chunk(shard, float(self.download_timeout), int(self.download_retry))
        except SizeMismatchError as err:  # as a ranged read of it reports it
            stale_size(shard.raw_data, self.index_path, err.size, err)
