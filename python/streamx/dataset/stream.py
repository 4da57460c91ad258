"""``Stream``: one source directory of a dataset, with its mixing weight."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.cache import cache_dir, cached_files
from streamx.cache.index_fetch import load_index_checked
from streamx.cache.local_claims import Claim, claim_local
from streamx.dataset import weights
from streamx.dataset.stream_files import FOLLOWER, VERIFIED, listed, listed_size, prepare_listed
from streamx.format.encodings import is_mds_encoding_safe
from streamx.format.index import INDEX_BASENAME, FileInfo, ShardInfo, ShardList
from streamx.format.lazy_shards import SchemaUse
from streamx.location import Location
from streamx.runtime.overrides import overridden
from streamx.storage.download import download_file

__all__ = ["Stream", "apply_weights"]


class Stream:
    """A dataset directory (remote and/or local) and how much of it an epoch draws.

    Args:
        remote: Remote directory or URL the shards come from, or ``None`` for local data.
        local: Local cache directory. ``None`` derives a temporary one from ``remote``.
        split: Optional sub-directory of both.
        proportion: Relative weight among streams.
        repeat: Multiple of this stream's samples drawn per epoch.
        choose: Absolute number of samples drawn per epoch.
        download_retry: Total download attempts per file.
        download_timeout: Seconds allowed per download.
        validate_hash: Hash algorithm checked when a file is downloaded or decompressed.
        keep_zip: Keep compressed files after decompressing them.
    """

    # Set only when given or derived: `hasattr` tells which weighting the user chose.
    proportion: float
    repeat: float
    choose: int
    download_retry: int
    download_timeout: float
    keep_zip: bool
    safe_keep_zip: bool

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        proportion: float | None = None,
        repeat: float | None = None,
        choose: int | None = None,
        download_retry: int | None = None,
        download_timeout: float | None = None,
        validate_hash: str | None = None,
        keep_zip: bool | None = None,
    ) -> None:
        # A file:// remote is the local directory it names: parsed once here, so comparing
        # it with `local` (the user's own files, never evicted) sees the same place.
        if remote is not None and Location.parse(remote).scheme == "file":
            remote = Location.parse(remote).local_path
        self.remote = remote
        self._local = local
        self.split = split or ""
        if sum(x is not None for x in (proportion, repeat, choose)) > 1:
            raise ValueError(
                "At most one of `proportion`, `repeat`, and `choose` may be specified; the "
                "others are derived"
            )
        self._proportion, self._repeat, self._choose = proportion, repeat, choose
        for name, value in (("proportion", proportion), ("repeat", repeat), ("choose", choose)):
            if value is not None:
                if value < 0:
                    raise ValueError(f"`{name}` must be non-negative")
                setattr(self, name, value)
        self._download_retry = download_retry
        if download_retry is not None:
            if download_retry < 0:
                raise ValueError("`download_retry` must be non-negative")
            self.download_retry = download_retry
        self._download_timeout = download_timeout
        if download_timeout is not None:
            if download_timeout <= 0:
                raise ValueError("`download_timeout` must be positive")
            self.download_timeout = download_timeout
        self.validate_hash = validate_hash
        self.local = local if local is not None else self._get_temporary_directory()
        self._keep_zip = keep_zip
        if keep_zip is not None:
            self.keep_zip = keep_zip
            self.safe_keep_zip = keep_zip or self.remote in {None, self.local}

    def _get_temporary_directory(self) -> str:
        """A cache directory named after the remote, private to this user (mosaicml-streaming
        uses ``<tempdir>/<digest>``, which another local user can create first)."""
        return cache_dir.private_default_dir(self.remote, self.split)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_claim", None)  # the process that built the dataset holds it
        return state

    def apply_default(self, default: dict[str, Any]) -> None:
        """Fills the settings this stream left unset from the dataset's arguments.

        Args:
            default: The dataset's ``split``, ``download_retry``, ``download_timeout``,
                ``validate_hash`` and ``keep_zip``.

        Raises:
            ValueError: If the stream has neither ``remote`` nor ``local``.
        """
        if not (self.remote or self._local):
            raise ValueError("`remote` and/or `local` path must be provided")
        if not self.split:
            self.split = default["split"] or ""
        if self._download_retry is None:
            self.download_retry = default["download_retry"]
        if self._download_timeout is None:
            self.download_timeout = default["download_timeout"]
        if self.validate_hash is None:
            self.validate_hash = default["validate_hash"] or None
        if self._keep_zip is None:
            self.keep_zip = default["keep_zip"]
            self.safe_keep_zip = default["keep_zip"] or self.remote in {None, self.local}

    @property
    def copies_into_cache(self) -> bool:
        """Whether this stream's shards are copied from ``remote`` into ``local``, and so
        counted against ``cache_limit`` and evicted. ``False``: the files read are the user's
        own (no remote, or ``local`` is the remote), never counted or deleted."""
        return self.remote is not None and self.remote != self.local

    @property
    def index_path(self) -> str:
        """Where this stream's ``index.json`` lives locally."""
        return os.path.join(self.local, self.split, INDEX_BASENAME)

    @classmethod
    def validate_weights(cls, streams: Sequence[Stream]) -> tuple[bool, bool]:
        """Checks how ``streams`` are weighted.

        Args:
            streams: Every stream of the dataset.

        Returns:
            ``(relative, unspecified)``: whether the streams are weighted by ``proportion``,
            and whether none of them gives a weight.

        Raises:
            ValueError: If a stream gives more than one of ``proportion``, ``repeat`` and
                ``choose``, or relative and absolute weights are mixed.

        Examples:
            >>> Stream.validate_weights([Stream(local="/a", proportion=1.0)])
            (True, False)
        """
        return weights.validate_weights(streams)

    @classmethod
    def apply_weights(
        cls,
        streams: Sequence[Stream],
        samples_per_stream: NDArray[np.int64],
        choose_per_epoch: int | None,
        seed: int,
    ) -> int:
        """Derives every stream's ``proportion``, ``repeat`` and ``choose`` and sets them.

        Args:
            streams: Every stream of the dataset.
            samples_per_stream: Underlying samples of each stream.
            choose_per_epoch: Epoch size, when streams are weighted relatively (or not at all).
            seed: Seed of the draw that hands out the rounding shortfall.

        Returns:
            Number of samples drawn per epoch.

        Raises:
            ValueError: If the weights are invalid (see :meth:`validate_weights`), or an epoch
                size is given with absolute weights.

        Examples:
            >>> streams = [Stream(local="/a", repeat=2), Stream(local="/b")]
            >>> Stream.apply_weights(streams, np.array([3, 4]), None, 0)
            10
        """
        for stream in streams:
            stream._forget_derived_weights()
        relative, unspecified = cls.validate_weights(streams)
        total = weights.derive_weights(
            streams, samples_per_stream, choose_per_epoch, seed, relative, unspecified
        )
        for stream in streams:
            stream._weights_derived = True
        return total

    def _forget_derived_weights(self) -> None:
        """Back to the weight the user gave, so a stream reused by another dataset is weighted
        as it was the first time (mosaicml-streaming raises then: three weights are set)."""
        if not getattr(self, "_weights_derived", False):
            return
        for key in ("proportion", "repeat", "choose"):
            if hasattr(self, key):
                delattr(self, key)
            given = getattr(self, f"_{key}")
            if given is not None:
                setattr(self, key, given)
        self._weights_derived = False

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        """Downloads one file of this stream from ``remote`` into ``local``, atomically.

        Every download of the stream's files (index and shards) goes through here, so a
        subclass may override it to fetch from elsewhere. Called while a shard is prepared,
        it knows the file's size from the cached index and fetches a large file as parallel
        ranged GETs.

        Args:
            from_basename: File name under ``remote/split``.
            to_basename: File name under ``local/split``, if different.

        Returns:
            The local path written.

        Raises:
            FileNotFoundError: If the stream has no remote, or the remote file is missing.
            OSError: If every attempt failed (``download_retry`` attempts in all).
        """
        local = os.path.join(self.local, self.split, to_basename or from_basename)
        if self.remote is None:
            raise FileNotFoundError(f"{local} is missing, and its stream has no `remote`")
        url = cached_files.remote_url(self.remote, self.split, from_basename)
        try:
            download_file(
                url,
                local,
                retry=self.download_retry,
                timeout=self.download_timeout,
                expected_size=listed_size(from_basename),
                progress=FOLLOWER.get(),
            )
        except FileNotFoundError as err:
            where = Location.parse(url)
            if where.is_remote:
                raise
            # A local remote's missing file reads as the OS says it (mosaicml-streaming's
            # copy raises just that, and its tests match the wording).
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), where.path) from err
        return local

    def _decompress_shard_part(
        self,
        zip_info: FileInfo,
        zip_filename: str,
        raw_filename: str,
        compression: str | None,
    ) -> None:
        """Checks a compressed shard file (with ``validate_hash``) and decompresses it.

        The compressed file is then deleted unless zips are kept. Called while a shard is
        prepared, decompression stops past the size the cached index gives the raw file.

        Args:
            zip_info: The compressed file's index entry.
            zip_filename: Its local path.
            raw_filename: Where the decompressed file goes (written atomically).
            compression: The shard's compression, e.g. ``'zstd:7'``.

        Raises:
            CorruptShardError: If the file does not decompress, or decompresses to more than
                the index's size.
            ValueError: If ``validate_hash`` names an algorithm the index lacks, or the shard
                has no compression.
            ChecksumError: If the compressed file's digest differs from the index.
        """
        if VERIFIED.get() != zip_filename:
            cached_files.check_hash(self.validate_hash, zip_info, zip_filename)
        if compression is None:
            raise ValueError(f"{zip_filename}: a compressed file of an uncompressed shard")
        max_bytes = listed_size(os.path.basename(raw_filename))
        _core.decompress_file(compression, zip_filename, raw_filename, max_bytes)
        if not self.safe_keep_zip:
            os.remove(zip_filename)

    def _prepare_shard_part(
        self, raw_info: FileInfo, zip_info: FileInfo | None = None, compression: str | None = None
    ) -> int:
        """Makes one file of a shard ready to read: downloads, checks and decompresses it.

        Args:
            raw_info: The uncompressed file's index entry.
            zip_info: The compressed file's entry, if the shard is compressed.
            compression: The shard's compression.

        Returns:
            The change in cache usage, in bytes as the index gives them.

        Raises:
            StaleIndexError: If a downloaded file's size differs from the cached index.
            ChecksumError: If ``validate_hash`` is set and a digest differs.
            FileNotFoundError: If a file is missing locally and remotely.
        """
        # Decompressing while downloading is the base hook's own way: a subclass's hook runs
        # once the compressed file is in.
        overlap = not overridden(type(self), Stream, ("_decompress_shard_part",))
        with listed(raw_info, zip_info):
            return prepare_listed(self, raw_info, zip_info, compression, overlap=overlap)

    def prepare_shard(self, shard: ShardInfo) -> int:
        """Makes every file of ``shard`` ready to read (download, check, decompress).

        Args:
            shard: One of this stream's shards.

        Returns:
            The change in cache usage, in bytes.

        Raises:
            StaleIndexError: If a downloaded file's size differs from the cached index.
            ChecksumError: If ``validate_hash`` is set and a digest differs.
            FileNotFoundError: If a file is missing locally and remotely.
        """
        return sum(
            self._prepare_shard_part(raw, packed, shard.compression)
            for raw, packed in shard.file_pairs
        )

    def get_shards(self, world: Any = None, allow_unsafe_types: bool = False) -> ShardList:
        """Loads this stream's index, downloading it first if it is not local.

        Args:
            world: Unused; kept for mosaicml-streaming's signature (every process may fetch
                the index: the download is atomic).
            allow_unsafe_types: Accept columns that run code when decoded (``pkl``).

        Returns:
            The stream's shards.

        Raises:
            RuntimeError: If there is no remote and no local ``index.json``.
            ValueError: If another stream caches (or cached) a different remote in ``local``,
                or a column is unsafe and ``allow_unsafe_types`` is False.
            UnsafeCacheDirError: If another local user could write into ``local``.
            CorruptIndexError: If ``index.json`` is not a valid index (a local one that is
                not is fetched again first, when there is a remote).
        """
        if self.remote is not None and getattr(self, "_claim", None) is None:
            where, remote = os.path.join(self.local, self.split), self.remote
            if remote != self.local:
                cache_dir.prepare(where, cached_files.remote_url(remote, self.split, ""))
            self._claim: Claim | None = claim_local(
                where, cached_files.remote_url(remote, self.split, "")
            )
        shards = load_index_checked(self._download_file, self.local, self.split, bool(self.remote))
        for use in shards.schema_uses():  # per distinct column layout, not per shard
            check_safe(use, allow_unsafe_types)
        return shards

    def set_up_local(
        self, shards: Sequence[ShardInfo], cache_usage_per_shard: NDArray[np.int64]
    ) -> None:
        """Brings the local directory to a consistent state and records what is there.

        Partially present shards are deleted, and a compressed file beside its
        decompressed one is dropped unless zips are kept.

        Args:
            shards: This stream's shards.
            cache_usage_per_shard: Filled with each shard's bytes on disk (0: absent).

        Raises:
            ValueError: If an uncompressed shard has compressed files.
        """
        for i, shard in enumerate(shards):
            cache_usage_per_shard[i] = cached_files.set_up_shard(shard, self.safe_keep_zip)

    def get_index_size(self) -> int:
        """Returns the size of the local ``index.json`` in bytes.

        Raises:
            FileNotFoundError: If it is not local yet.
        """
        return os.stat(self.index_path).st_size


def check_safe(shard: ShardInfo | SchemaUse, allow_unsafe_types: bool) -> None:
    """Refuses a shard with a column that runs code when decoded, unless allowed.

    Raises:
        ValueError: If a column is unsafe and ``allow_unsafe_types`` is False.
    """
    if allow_unsafe_types:
        return
    for name, encoding in zip(shard.column_names, shard.column_encodings):
        if not is_mds_encoding_safe(encoding):
            raise ValueError(
                f"Column {name} contains an unsafe type: {encoding}. To proceed anyway, set "
                "``allow_unsafe_types=True``."
            )


def apply_weights(
    streams: Sequence[Stream],
    samples_per_stream: NDArray[np.int64],
    epoch_size: int | None,
    seed: int,
) -> int:
    """:meth:`Stream.apply_weights` of the base class, as mosaicml-streaming's dataset calls it."""
    return Stream.apply_weights(streams, samples_per_stream, epoch_size, seed)
