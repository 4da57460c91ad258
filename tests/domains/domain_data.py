"""Small datasets in the column layouts of mosaicml-streaming's converters, and the
comparison of samples decoded by streamx and by mosaicml-streaming."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import streamx
from samples import assert_same_value

# Columns as each converter in mosaicml-streaming 0.13.0 writes them.
LAYOUTS: dict[str, dict[str, str]] = {
    "c4": {"text": "str", "timestamp": "str", "url": "str"},
    "pile": {"text": "str", "pile_set_name": "str"},
    "enwiki": dict.fromkeys(
        (
            "input_ids",
            "input_mask",
            "segment_ids",
            "masked_lm_positions",
            "masked_lm_ids",
            "masked_lm_weights",
            "next_sentence_labels",
        ),
        "bytes",
    ),
    "cifar10": {"i": "int", "x": "pil", "y": "int"},
    "imagenet": {"i": "int", "x": "jpeg", "y": "int"},
    "ade20k": {"uid": "bytes", "x": "jpeg", "y": "png"},
    "coco": {
        "img": "jpeg",
        "img_id": "int",
        "htot": "int",
        "wtot": "int",
        "bbox_sizes": "ndarray:float32",
        "bbox_labels": "ndarray:int64",
    },
    "webvid_inside": {
        "videoid": "str",
        "name": "str",
        "page_idx": "str",
        "page_dir": "str",
        "duration": "int",
        "contentUrl": "str",
        "content": "bytes",
    },
    "webvid_outside": {
        "videoid": "str",
        "name": "str",
        "page_idx": "str",
        "page_dir": "str",
        "duration": "int",
        "contentUrl": "str",
        "content_path": "str",
    },
}
NUM_SAMPLES = 9
WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "again")


def _image(i: int, mode: str, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(i)
    channels = {"RGB": 3, "L": 1}[mode]
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    return Image.fromarray(pixels.squeeze(-1) if channels == 1 else pixels, mode)


def _i32(values: Any) -> bytes:
    return np.asarray(values, np.int32).tobytes()


def _enwiki(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    length = 8 + i % 3
    positions = np.sort(rng.choice(length, 3, replace=False))
    return {
        "input_ids": _i32(rng.integers(0, 30_000, length)),
        "input_mask": _i32(np.ones(length)),
        "segment_ids": _i32(np.arange(length) >= length // 2),
        "masked_lm_positions": _i32(positions),
        "masked_lm_ids": _i32(rng.integers(0, 30_000, 3)),
        "masked_lm_weights": np.ones(3, np.float32).tobytes(),
        "next_sentence_labels": _i32([i % 2]),
    }


def _coco(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    boxes = i % 3 + 1
    return {
        "img": _image(i, "L" if i % 2 else "RGB", (6, 5)),
        "img_id": 1000 + i,
        "htot": 480 + i,
        "wtot": 640 - i,
        "bbox_sizes": rng.random((boxes, 4)).astype(np.float32),
        "bbox_labels": rng.integers(0, 80, boxes).astype(np.int64),
    }


def _webvid(i: int, outside: bool) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "videoid": str(10_000 + i),
        "name": f"video {i}",
        "page_idx": str(i // 4),
        "page_dir": f"{i // 4:03}",
        "duration": 10 + i,
        "contentUrl": f"https://example.com/{i}.mp4",
    }
    if outside:
        sample["content_path"] = f"{i // 4:03}/{10_000 + i}.mp4"
    else:
        sample["content"] = video_bytes(i)
    return sample


def video_bytes(i: int) -> bytes:
    """The stand-in bytes of video ``i``."""
    return bytes(np.random.default_rng(500 + i).integers(0, 256, 40 + i, dtype=np.uint8))


def sample_for(layout: str, i: int) -> dict[str, Any]:
    """The i-th sample of a dataset in ``layout``."""
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3 + 2 * i)) + " unseen"
    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "c4": lambda: {"text": text, "timestamp": f"2019-04-{i + 1:02}", "url": f"u{i}"},
        "pile": lambda: {"text": text, "pile_set_name": ("Pile-CC", "Github")[i % 2]},
        "enwiki": lambda: _enwiki(i),
        "cifar10": lambda: {"i": i, "x": _image(i, "RGB", (4, 4)), "y": i % 10},
        "imagenet": lambda: {"i": i, "x": _image(i, "RGB", (7, 5)), "y": 990 + i},
        "ade20k": lambda: {
            "uid": f"ADE_{i:08}".encode(),
            "x": _image(i, "RGB", (8, 6)),
            "y": _image(100 + i, "L", (8, 6)),
        },
        "coco": lambda: _coco(i),
        "webvid_inside": lambda: _webvid(i, outside=False),
        "webvid_outside": lambda: _webvid(i, outside=True),
    }
    return makers[layout]()


def write(lib: Any, out: Path, layout: str) -> str:
    """Writes the dataset with ``lib``'s (streamx's or mosaicml-streaming's) MDSWriter;
    small shards so that samples span several of them."""
    with lib.MDSWriter(out=str(out), columns=LAYOUTS[layout], size_limit=2000) as writer:
        for i in range(NUM_SAMPLES):
            writer.write(sample_for(layout, i))
    return str(out)


def writers() -> dict[str, Any]:
    """The two MDS writers, by name."""
    import streaming

    return {"streamx": streamx, "mosaic": streaming}


def assert_same(ours: Any, theirs: Any, where: str = "") -> None:
    """Same types and values, through the containers the domain datasets return."""
    import torch

    if isinstance(theirs, torch.Tensor):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} != {type(theirs)}"
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        assert torch.equal(ours, theirs), where
    elif isinstance(theirs, Mapping):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} != {type(theirs)}"
        assert list(ours.keys()) == list(theirs.keys()), where
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, tuple):
        assert type(ours) is tuple and len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{k}]")
    elif isinstance(theirs, list):
        assert type(ours) is list and len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{k}]")
    else:
        assert_same_value(ours, theirs, where)


def assert_same_samples(ours: Any, theirs: Any) -> None:
    """Every ``ds[i]`` and one epoch of iteration agree between the two datasets."""
    assert len(ours) == len(theirs) and ours.size == theirs.size == NUM_SAMPLES
    for i in range(NUM_SAMPLES):
        assert_same(ours[i], theirs[i], f"sample {i}")
    their_epoch = list(theirs)
    our_epoch = list(ours)
    assert len(our_epoch) == len(their_epoch)
    for k, (a, b) in enumerate(zip(our_epoch, their_epoch)):
        assert_same(a, b, f"epoch position {k}")
