"""``Stream``: one source directory of a dataset, with its mixing weight."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.format.encodings import is_mds_encoding_safe
from streamx.format.index import INDEX_BASENAME, ShardInfo, parse_index

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
        self.local = local if local is not None else self._temporary_local()
        self._keep_zip = keep_zip
        if keep_zip is not None:
            self.keep_zip = keep_zip
            self.safe_keep_zip = keep_zip or self.remote in {None, self.local}

    def _temporary_local(self) -> str:
        """A cache directory named after the remote, as mosaicml-streaming derives it."""
        digest = ""
        if self.remote is not None:
            digest = hashlib.blake2s(self.remote.encode("utf-8"), digest_size=16).hexdigest()
        return os.path.join(tempfile.gettempdir(), digest, self.split)

    def apply_default(self, default: dict[str, Any]) -> None:
        """Fills the settings this stream left unset from the dataset's arguments."""
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
    def index_path(self) -> str:
        """Where this stream's ``index.json`` lives locally."""
        return os.path.join(self.local, self.split, INDEX_BASENAME)

    def get_shards(self, world: Any = None, allow_unsafe_types: bool = False) -> list[ShardInfo]:
        """Loads this stream's index (downloading it first if needed) and validates it."""
        path = self.index_path
        if not os.path.exists(path):
            if not self.remote:
                raise RuntimeError(
                    f"No `remote` provided, but local file {path} does not exist either"
                )
            from streamx.storage.shard_cache import fetch_index

            fetch_index(self, world)
        shards = parse_index(self.local, self.split, path)
        for shard in shards:
            _check_safe(shard, allow_unsafe_types)
        return shards

    def get_index_size(self) -> int:
        """Size of the local ``index.json`` in bytes."""
        return os.stat(self.index_path).st_size


def _check_safe(shard: ShardInfo, allow_unsafe_types: bool) -> None:
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
    """Derives every stream's ``proportion``, ``repeat`` and ``choose``; returns the epoch size.

    Relative weights (``proportion``) split ``epoch_size`` by weight; the rounding shortfall
    goes one sample each to streams drawn with ``default_rng(seed)``, as upstream does.
    """
    relative, unspecified = _weighting(streams)
    if relative or (unspecified and epoch_size):
        if relative:
            weights = np.array([s.proportion for s in streams], np.float64)
        else:
            weights = samples_per_stream.astype(np.float64)
        total = int(epoch_size or samples_per_stream.sum())
        weights /= weights.sum()
        choose = (total * weights).astype(np.int64)
        shortfall = total - int(choose.sum())
        picked = np.random.default_rng(seed).choice(len(streams), shortfall, False)
        choose[picked] += 1
        proportions = weights
    else:
        if epoch_size:
            raise ValueError("Only provide `choose` when weighting streams relatively")
        choose = np.array(
            [_absolute_choose(s, n) for s, n in zip(streams, samples_per_stream)], np.int64
        )
        proportions = choose / choose.sum()
        total = int(choose.sum())
    repeats = choose / samples_per_stream
    for stream, proportion, repeat, count in zip(streams, proportions, repeats, choose):
        stream.proportion, stream.repeat, stream.choose = proportion, repeat, count
    return total


def _absolute_choose(stream: Stream, samples: int) -> int:
    if hasattr(stream, "repeat"):
        return int(stream.repeat * samples)
    if hasattr(stream, "choose"):
        return int(stream.choose)
    return int(samples)


def _weighting(streams: Sequence[Stream]) -> tuple[bool, bool]:
    """Returns (relative, unspecified); relative and absolute weights may not mix."""
    relative = hasattr(streams[0], "proportion")
    unspecified = True
    for stream_id, stream in enumerate(streams):
        if hasattr(stream, "proportion") != relative:
            raise ValueError(
                "Relative (`proportion`) and absolute (`repeat`, `choose`, none) stream weights "
                f"are incompatible with each other (error in stream {stream_id})"
            )
        if any(hasattr(stream, k) for k in ("proportion", "repeat", "choose")):
            unspecified = False
    return relative, unspecified
