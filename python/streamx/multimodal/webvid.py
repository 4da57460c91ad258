"""WebVid video-text datasets, with the videos inside the shards or in files beside them.

The "outside" variants read each sample's video from ``extra_local/<content_path>``,
downloading it from ``extra_remote/<content_path>`` first if it is not there yet.
"""

from __future__ import annotations

import os
from typing import Any

from streamx.dataset.args_doc import with_streaming_args
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo
from streamx.storage.download import download_file
from streamx.storage.filesystems import get_filesystem

__all__ = ["StreamingInsideWebVid", "StreamingOutsideDTWebVid", "StreamingOutsideGIWebVid"]


class StreamingInsideWebVid(StreamingDataset):
    """WebVid with each video's bytes in the shards (column ``content``); samples are
    returned as stored.

    Takes exactly the arguments of :class:`~streamx.StreamingDataset`, with its defaults.

    Examples:
        >>> ds = StreamingInsideWebVid(local="/data/webvid", batch_size=8)  # doctest: +SKIP
        >>> video = ds[0]["content"]  # doctest: +SKIP
    """


@with_streaming_args(
    remote="Remote directory or URL to stream the shards from.",
    local="Local cache directory of the shards.",
    download_retry="Download attempts per file, videos included.",
    download_timeout="Seconds allowed per download, videos included.",
    validate_hash="Hash algorithm checked on shard download.",
    cache_limit="Byte limit of the shard cache (videos are not counted).",
)
class StreamingOutsideGIWebVid(StreamingDataset):
    """WebVid with each video in its own file, named by the sample's ``content_path``;
    the video is fetched when the sample is read and added to it as ``content`` (bytes).

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class. All arguments are keyword-only.

    Args:
        {streaming_args}
        extra_local: Local directory of the video files. Without it, or without
            ``extra_remote``, samples are returned as stored.
        extra_remote: Remote directory or URL of the video files.

    Raises:
        ValueError: for an ``extra_remote`` with an unsupported scheme or an invalid
            :class:`~streamx.StreamingDataset` argument; when read, for a
            ``content_path`` that is absolute or leaves ``extra_local``.
        FileNotFoundError: when read, if the video is neither local nor remote.

    Examples:
        >>> ds = StreamingOutsideGIWebVid(local="/data/webvid", extra_local="/tmp/videos",
        ...                               extra_remote="s3://bucket/videos")  # doctest: +SKIP
        >>> video = ds[0]["content"]  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        partition_algo: PartitionAlgo = "orig",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: ShuffleAlgo = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = 1 << 18,
        extra_local: str | None = None,
        extra_remote: str | None = None,
    ) -> None:
        super().__init__(
            remote=remote,
            local=local,
            split=split,
            download_retry=download_retry,
            download_timeout=download_timeout,
            validate_hash=validate_hash,
            keep_zip=keep_zip,
            epoch_size=epoch_size,
            predownload=predownload,
            cache_limit=cache_limit,
            partition_algo=partition_algo,
            num_canonical_nodes=num_canonical_nodes,
            batch_size=batch_size,
            shuffle=shuffle,
            shuffle_algo=shuffle_algo,
            shuffle_seed=shuffle_seed,
            shuffle_block_size=shuffle_block_size,
        )
        self._extra_retry = max(download_retry, 1)
        self.download_timeout = download_timeout
        self.extra_local = extra_local
        self.extra_remote = extra_remote
        if extra_remote is not None:
            get_filesystem(extra_remote)  # an unsupported scheme fails here, not mid-epoch

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """Returns sample ``idx`` with its video's bytes as ``content``."""
        sample = super().get_item(idx, retry)
        if self.extra_local and self.extra_remote:
            sample["content"] = self._read_video(idx, sample["content_path"])
        return sample

    def _read_video(self, idx: int, rel_path: str) -> bytes:
        """The bytes of ``extra_local/rel_path``, downloaded first if missing."""
        local = self._local_video_path(idx, rel_path)
        if not os.path.exists(local):
            remote = os.path.join(str(self.extra_remote), rel_path)
            download_file(remote, local, retry=self._extra_retry, timeout=self.download_timeout)
        with open(local, "rb") as file:
            return file.read()

    def _local_video_path(self, idx: int, rel_path: str) -> str:
        """``extra_local/rel_path``, refusing a path that would land outside it."""
        root = os.path.abspath(str(self.extra_local))
        local = os.path.abspath(os.path.join(root, rel_path))
        if os.path.isabs(rel_path) or os.path.commonpath([root, local]) != root:
            raise ValueError(
                f"Sample {idx}: content_path {rel_path!r} must be a relative path inside "
                f"extra_local ({self.extra_local})"
            )
        return local


class StreamingOutsideDTWebVid(StreamingOutsideGIWebVid):
    """WebVid with each video in its own file, named by the sample's ``content_path``,
    and added to the sample as ``content`` (bytes).

    Takes the arguments of :class:`StreamingOutsideGIWebVid`, which documents them and
    the exceptions. mosaicml-streaming fetches these videos in its shard download thread,
    ahead of reading; streamx fetches them when the sample is read, as the "GI" variant
    does, so the samples are the same and only the timing of the downloads differs.

    Examples:
        >>> ds = StreamingOutsideDTWebVid(local="/data/webvid", extra_local="/tmp/videos",
        ...                               extra_remote="s3://bucket/videos")  # doctest: +SKIP
        >>> video = ds[0]["content"]  # doctest: +SKIP
    """
