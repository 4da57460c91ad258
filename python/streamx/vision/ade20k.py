"""ADE20K semantic segmentation (https://groups.csail.mit.edu/vision/datasets/ADE20K/), streamed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamx.dataset.args_doc import with_streaming_args
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo

__all__ = ["StreamingADE20K"]


@with_streaming_args()
class StreamingADE20K(StreamingDataset):
    """ADE20K as written by mosaicml-streaming's converter: columns ``uid`` (``bytes``),
    ``x`` (``jpeg`` image) and ``y`` (``png`` annotation); samples are ``(x, y)`` tuples
    of PIL images unless the transforms change them.

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class.

    Args:
        {streaming_args}
        joint_transform: Called first, as ``joint_transform((x, y))``, returning ``(x, y)``
            (for crops and flips that must match between image and annotation).
        transform: Then applied to the image.
        target_transform: Then applied to the annotation.

    Raises:
        ValueError: for an invalid :class:`~streamx.StreamingDataset` argument.

    Examples:
        >>> ds = StreamingADE20K(local="/data/ade20k", split="val")  # doctest: +SKIP
        >>> image, annotation = ds[0]  # doctest: +SKIP
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
        partition_algo: PartitionAlgo = "orig",
        cache_limit: int | str | None = None,
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: ShuffleAlgo = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = 1 << 18,
        joint_transform: Callable[[tuple[Any, Any]], tuple[Any, Any]] | None = None,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
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
        self.joint_transform = joint_transform
        self.transform = transform
        self.target_transform = target_transform

    def get_item(self, idx: int, retry: int = 7) -> tuple[Any, Any]:
        """Returns the transformed ``(image, annotation)`` of sample ``idx``."""
        sample = super().get_item(idx, retry)
        x, y = sample["x"], sample["y"]
        if self.joint_transform:
            x, y = self.joint_transform((x, y))
        if self.transform:
            x = self.transform(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y
