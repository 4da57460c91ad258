"""streamx.vision.convert.base.convert_image_class_dataset writes what mosaicml-streaming's
writes, byte for byte, and streamx.vision reads it back as mosaicml-streaming does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

pytestmark = pytest.mark.compat

pytest.importorskip("torchvision")
from streaming.vision.convert.base import (  # noqa: E402
    convert_image_class_dataset as mosaic_convert,
)

from streamx.vision.convert.base import convert_image_class_dataset  # noqa: E402


def _images(count: int) -> list[tuple[Image.Image, int]]:
    rng = np.random.default_rng(count)
    return [
        (Image.fromarray(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)), int(rng.integers(10)))
        for _ in range(count)
    ]


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"split": "train", "encoding": "png", "size_limit": 500},
        {"compression": "zstd", "hashes": ["sha1", "xxh64"], "encoding": "jpeg"},
    ],
    ids=["defaults", "png-split", "zstd-hashes"],
)
def test_same_files_as_mosaic(tmp_path: Path, options: dict[str, Any]) -> None:
    dataset = _images(23)
    np.random.seed(5)  # both draw the sample order from numpy's global state
    convert_image_class_dataset(dataset, str(tmp_path / "ours"), progress_bar=False, **options)
    np.random.seed(5)
    mosaic_convert(dataset, str(tmp_path / "theirs"), progress_bar=False, **options)  # type: ignore[arg-type]
    ours, theirs = _files(tmp_path / "ours"), _files(tmp_path / "theirs")
    assert ours == theirs and len(ours) >= 2


def test_written_dataset_reads_back(tmp_path: Path) -> None:
    from streamx.vision import StreamingCIFAR10

    dataset = _images(6)
    convert_image_class_dataset(dataset, str(tmp_path), "val", progress_bar=False)
    ds = StreamingCIFAR10(local=str(tmp_path), split="val", batch_size=2, transform=np.asarray)
    labels = sorted(int(ds[i][1]) for i in range(ds.size))
    assert labels == sorted(label for _, label in dataset)
    for image, label in (ds[i] for i in range(ds.size)):
        assert any(np.array_equal(image, np.asarray(x)) and label == y for x, y in dataset)
