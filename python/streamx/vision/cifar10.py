"""CIFAR-10 image classification (https://www.cs.toronto.edu/~kriz/cifar.html), streamed."""

from __future__ import annotations

from streamx.vision.base import StreamingVisionDataset

__all__ = ["StreamingCIFAR10"]


class StreamingCIFAR10(StreamingVisionDataset):
    """CIFAR-10 as written by mosaicml-streaming's converter: columns ``x`` (``pil``
    image) and ``y`` (``int`` label); samples are transformed ``(image, label)`` tuples.

    Takes the arguments of :class:`~streamx.vision.StreamingVisionDataset`, which
    documents them and the exceptions.

    Examples:
        >>> ds = StreamingCIFAR10(remote="s3://bucket/cifar10", local="/tmp/cifar10",
        ...                       split="train", batch_size=128, shuffle=True)  # doctest: +SKIP
        >>> image, label = ds[0]  # doctest: +SKIP
    """
