"""COCO object detection (https://cocodataset.org), streamed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamx.dataset.args_doc import with_streaming_args
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo

__all__ = ["StreamingCOCO"]


@with_streaming_args()
class StreamingCOCO(StreamingDataset):
    """COCO as written by mosaicml-streaming's converter: columns ``img`` (``jpeg``),
    ``img_id``, ``htot``, ``wtot`` (``int``), ``bbox_sizes`` (``ndarray:float32``) and
    ``bbox_labels`` (``ndarray:int64``).

    Samples are ``(img, img_id, (htot, wtot), bbox_sizes, bbox_labels)``, with ``img``
    converted to an RGB PIL image, unless ``transform`` changes them.

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class.

    Args:
        {streaming_args}
        transform: Called as ``transform(img, (htot, wtot), bbox_sizes, bbox_labels)`` and
            returning the same four values.

    Raises:
        ValueError: for an invalid :class:`~streamx.StreamingDataset` argument.

    Examples:
        >>> ds = StreamingCOCO(local="/data/coco", split="val")  # doctest: +SKIP
        >>> img, img_id, (height, width), boxes, labels = ds[0]  # doctest: +SKIP
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
        transform: Callable[..., tuple[Any, tuple[Any, Any], Any, Any]] | None = None,
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
        self.transform = transform

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """Returns ``(img, img_id, (htot, wtot), bbox_sizes, bbox_labels)`` of sample
        ``idx``, after ``transform``."""
        sample = super().get_item(idx, retry)
        img = sample["img"].convert("RGB")
        size = (sample["htot"], sample["wtot"])
        boxes, labels = sample["bbox_sizes"], sample["bbox_labels"]
        if self.transform:
            img, size, boxes, labels = self.transform(img, size, boxes, labels)
        return img, sample["img_id"], size, boxes, labels
