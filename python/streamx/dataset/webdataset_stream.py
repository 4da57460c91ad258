"""``WebDatasetStream``: WebDataset tar shards read in place, one tar per shard."""

from __future__ import annotations

from typing import Any

from streamx.dataset.in_place_stream import InPlaceStream
from streamx.format.index import ShardInfo
from streamx.format.webdataset.index import MANIFEST, WebDatasetIndex, build_index
from streamx.format.webdataset.tar_shard import fetch_tar

__all__ = ["WebDatasetStream"]


class WebDatasetStream(InPlaceStream):
    """WebDataset tar shards (a ``.tar`` file, a directory of them, or a glob; local or
    remote), read where they live.

    Each tar is a shard: the epoch order, partitions, resumption, ``cache_limit`` and
    eviction treat it as they treat an MDS shard of as many samples. A tar's member table is
    read once from its headers, by range, and cached in ``local``; samples then have random
    access. Members are grouped into samples as WebDataset groups them (``abc.jpg`` and
    ``abc.json`` are the fields ``jpg`` and ``json`` of the sample keyed ``abc``), and each
    sample carries its ``__key__`` and ``__url__``.

    Local tars are read where they lie, as ``wids`` reads them: nothing is copied into
    ``local`` but their member tables, ``cache_limit`` does not count them and eviction
    never touches them. Each read checks the tar still has the size and mtime its table was
    read at; a tar changed since raises ``StaleIndexError`` naming it (a new dataset reads
    it again).

    A remote tar is downloaded whole when it is needed; while it is on its way, samples
    wanted from it are read by range, one GET of each sample's members, up to a budget
    (:mod:`~streamx.format.webdataset.tar_ranges`; ``STREAMX_RANGE_READS=0`` turns this
    off). The first sample of a cold epoch thus comes before its tar.

    Args:
        remote: A ``.tar`` file, a directory of them, or a glob, as a path or URL.
        local: Cache directory (``None``: a private one derived from ``remote``).
        decode: Decode fields by extension: ``txt`` to ``str``, ``cls`` to ``int``, ``json``
            to Python values, ``npy``/``npz`` to arrays. Other fields, pickles included,
            stay ``bytes``. ``False``: every field is ``bytes``.
        decode_images: Hand out image fields (``jpg``, ``png``, ...) as PIL images rather
            than their encoded bytes.
        **kwargs: ``split``, ``proportion``, ``repeat``, ``choose``, ``download_retry``,
            ``download_timeout``, as for :class:`Stream`.

    Examples:
        >>> import io, tarfile, tempfile
        >>> path = tempfile.mkdtemp() + "/shard-000.tar"
        >>> with tarfile.open(path, "w") as tar:
        ...     for key, label in (("a", 3), ("b", 5)):
        ...         data = str(label).encode()
        ...         info = tarfile.TarInfo(f"{key}.cls")
        ...         info.size = len(data)
        ...         tar.addfile(info, io.BytesIO(data))
        >>> stream = WebDatasetStream(remote=path, local=tempfile.mkdtemp())
        >>> stream.apply_default({"split": None, "download_retry": 2,
        ...     "download_timeout": 60.0, "validate_hash": None, "keep_zip": False})
        >>> stream.get_shards().samples.tolist()
        [2]
    """

    def __init__(
        self,
        *,
        remote: str,
        local: str | None = None,
        decode: bool = True,
        decode_images: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("validate_hash"):
            raise ValueError("`validate_hash` does not apply to tar sources")
        super().__init__(remote=remote, local=local, **kwargs)
        self.decode = decode
        self.decode_images = decode_images
        self._in_place = False  # known once the source is listed (`build_units`)

    MANIFEST = MANIFEST

    def build_units(self, folder: str) -> WebDatasetIndex:
        """Lists the source and counts each tar's samples (cached), one unit per tar.

        Raises:
            FileNotFoundError: If the source holds no tar.
            CorruptShardError: If a file is not a tar or is truncated, naming it.
        """
        index = build_index(
            self.source,
            folder,
            float(self.download_timeout),
            int(self.download_retry),
            self.decode,
            self.decode_images,
        )
        self._in_place = index.in_place
        return index

    @property
    def copies_into_cache(self) -> bool:
        """Whether the tars are fetched into ``local``: not where every one is a local
        file, read where it lies."""
        return super().copies_into_cache and not self._in_place

    def prepare_shard(self, shard: ShardInfo) -> int:
        """Fetches the whole tar into its local file."""
        return fetch_tar(shard, float(self.download_timeout), int(self.download_retry))
