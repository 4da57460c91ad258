"""Write an image classification dataset (``dataset[i] == (image, label)``) as MDS."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from streamx.format.writers import MDSWriter

__all__ = ["ImageClassDataset", "convert_image_class_dataset"]


class ImageClassDataset(Protocol):
    """A map-style dataset of ``(image, label)`` pairs, e.g. a torchvision dataset."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> tuple[Any, Any]: ...


def convert_image_class_dataset(
    dataset: ImageClassDataset,
    out_root: str,
    split: str | None = None,
    compression: str | None = None,
    hashes: list[str] | None = None,
    size_limit: int = 1 << 24,
    progress_bar: bool = True,
    leave: bool = False,
    encoding: str = "pil",
) -> None:
    """Writes ``dataset`` to ``out_root/split`` as MDS columns ``i`` (``int``, the index
    in ``dataset``), ``x`` (the image, in ``encoding``) and ``y`` (``int`` label).

    Samples are written in a random order drawn from numpy's global random state
    (``np.random.permutation``), as mosaicml-streaming does: seed it for a reproducible
    output.

    Args:
        dataset: The dataset to convert.
        out_root: Output directory (or remote URL) under which the split is written.
        split: Sub-directory of ``out_root``; none if ``None``.
        compression: Shard compression, e.g. ``'zstd:7'``.
        hashes: Hash algorithms recorded for every shard.
        size_limit: Uncompressed shard size, in bytes, at which a new shard starts.
        progress_bar: Show a progress bar.
        leave: Leave the progress bar on screen when done.
        encoding: MDS encoding of the images, e.g. ``'pil'``, ``'jpeg'`` or ``'png'``.

    Raises:
        ValueError: for an unknown ``encoding``, ``compression`` or hash, or a label that
            is not an ``int``, from :class:`~streamx.MDSWriter`.

    Examples:
        >>> from PIL import Image
        >>> import tempfile
        >>> images = [(Image.new("RGB", (4, 4)), label) for label in range(3)]
        >>> with tempfile.TemporaryDirectory() as out:
        ...     convert_image_class_dataset(images, out, "train", progress_bar=False)
        ...     sorted(os.listdir(os.path.join(out, "train")))
        ['index.json', 'shard.00000.mds']
    """
    columns = {"i": "int", "x": encoding, "y": "int"}
    indices: Iterable[int] = np.random.permutation(len(dataset)).tolist()
    if progress_bar:
        indices = tqdm(indices, leave=leave)
    out = os.path.join(out_root, split or "")
    with MDSWriter(
        out=out,
        columns=columns,
        compression=compression,
        hashes=hashes or [],
        size_limit=size_limit,
        progress_bar=progress_bar,
    ) as writer:
        for i in indices:
            x, y = dataset[i]
            writer.write({"i": i, "x": x, "y": y})
