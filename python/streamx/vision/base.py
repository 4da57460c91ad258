"""``StreamingVisionDataset``: image/label samples as a torchvision ``VisionDataset``.

Like mosaicml-streaming, this module needs torchvision: the class is a ``VisionDataset``
(so ``isinstance`` checks in torchvision-based code hold) and, without a ``transform``,
images become tensors through torchvision's ``to_tensor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchvision.datasets import VisionDataset
from torchvision.transforms.functional import to_tensor

from streamx.dataset.args_doc import with_streaming_args
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo

__all__ = ["StreamingVisionDataset"]


class StandardTransform:
    """Applies an input transform and a target transform to an ``(x, y)`` pair.

    Args:
        transform: Applied to ``x``; when not given (or falsy), ``x`` goes through
            torchvision's ``to_tensor`` instead.
        target_transform: Applied to ``y`` when given; otherwise ``y`` is returned as is.

    Examples:
        >>> from PIL import Image
        >>> x, y = StandardTransform(target_transform=str)(Image.new("L", (2, 1)), 3)
        >>> tuple(x.shape), y
        ((1, 1, 2), '3')
    """

    def __init__(
        self,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, x: Any, y: Any) -> tuple[Any, Any]:
        """Returns the transformed ``(x, y)``."""
        # Truthiness, not ``is None``, as upstream tests it.
        x = self.transform(x) if self.transform else to_tensor(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y


@with_streaming_args()
class StreamingVisionDataset(StreamingDataset, VisionDataset):  # type: ignore[misc]
    """A streaming dataset of ``{'x': image, 'y': target}`` samples, returned as a
    transformed ``(x, y)`` tuple.

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning; the
    defaults are mosaicml-streaming's for this class (``partition_algo='orig'``,
    ``shuffle_algo='py1s'``, ``shuffle_block_size=1 << 18``), and ``batch_size`` is
    required.

    Args:
        {streaming_args}
        transforms: Called as ``transforms(x, y)``; excludes ``transform`` and
            ``target_transform``.
        transform: Applied to the image (default: torchvision's ``to_tensor``).
        target_transform: Applied to the target.

    Raises:
        ValueError: if ``transforms`` is given together with ``transform`` or
            ``target_transform``, or for an invalid :class:`~streamx.StreamingDataset`
            argument.

    Examples:
        >>> ds = StreamingVisionDataset(local="/data/cifar10", batch_size=32)  # doctest: +SKIP
        >>> image, label = ds[0]  # doctest: +SKIP
    """

    # VisionDataset's repr reads ``root``, which a streaming dataset does not have
    # (mosaicml-streaming's repr raises AttributeError for want of it).
    root: str | None = None

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
        batch_size: int,
        shuffle: bool = False,
        shuffle_algo: ShuffleAlgo = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = 1 << 18,
        transforms: Callable[[Any, Any], tuple[Any, Any]] | None = None,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        # VisionDataset.__init__ is not called (it wants a root directory), as upstream.
        StreamingDataset.__init__(
            self,
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
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as an argument"
            )
        self.transform = transform
        self.target_transform = target_transform
        if transforms is None:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """Returns ``transforms(x, y)`` of sample ``idx``, fetching its shard if needed."""
        sample = super().get_item(idx, retry)
        return self.transforms(sample["x"], sample["y"])

    def __repr__(self) -> str:
        # torchvision's summary (class, datapoints, transforms), as in mosaicml-streaming,
        # rather than StreamingDataset's settings.
        return str(VisionDataset.__repr__(self))
