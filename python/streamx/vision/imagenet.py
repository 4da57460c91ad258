"""ImageNet 2012 classification (http://image-net.org/), streamed."""

from __future__ import annotations

from streamx.vision.base import StreamingVisionDataset

__all__ = ["StreamingImageNet"]


class StreamingImageNet(StreamingVisionDataset):
    """ImageNet as written by mosaicml-streaming's converter: columns ``i`` (``int``),
    ``x`` (``jpeg`` image) and ``y`` (``int`` label); samples are transformed
    ``(image, label)`` tuples.

    Takes the arguments of :class:`~streamx.vision.StreamingVisionDataset`, which
    documents them and the exceptions.

    Examples:
        >>> ds = StreamingImageNet(remote="s3://bucket/imagenet", local="/tmp/imagenet",
        ...                        split="val", batch_size=256)  # doctest: +SKIP
        >>> image, label = ds[0]  # doctest: +SKIP
    """
