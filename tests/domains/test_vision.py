"""streamx.vision against mosaicml-streaming's streaming.vision, sample by sample."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from domain_data import assert_same_samples

pytestmark = pytest.mark.compat

torchvision = pytest.importorskip("torchvision")
import streaming.vision  # noqa: E402
from torchvision import transforms as T  # noqa: E402

import streamx.vision  # noqa: E402

WRITERS = ["streamx", "mosaic"]


def _pair(cls: str, local: str, **kwargs: Any) -> tuple[Any, Any]:
    kwargs.setdefault("num_canonical_nodes", 1)  # the default, 64, exceeds the 9 samples
    ours = getattr(streamx.vision, cls)(local=local, **kwargs)
    theirs = getattr(streaming.vision, cls)(local=local, **kwargs)
    return ours, theirs


def _double(y: int) -> int:
    return 2 * y


def _joint(x: Any, y: Any) -> tuple[Any, Any]:
    return T.functional.pil_to_tensor(x), -y


CLASSIFICATION_TRANSFORMS: dict[str, dict[str, Any]] = {
    "default": {},
    "transform": {"transform": T.Compose([T.Resize((3, 2)), T.PILToTensor()])},
    "target": {"target_transform": _double},
    "both": {"transform": T.PILToTensor(), "target_transform": _double},
    "joint": {"transforms": _joint},
}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("cls", ["StreamingCIFAR10", "StreamingImageNet"])
@pytest.mark.parametrize("kind", list(CLASSIFICATION_TRANSFORMS))
def test_classification(
    dataset_dir: Callable[[str, str], str], writer: str, cls: str, kind: str
) -> None:
    layout = {"StreamingCIFAR10": "cifar10", "StreamingImageNet": "imagenet"}[cls]
    local = dataset_dir(layout, writer)
    ours, theirs = _pair(cls, local, batch_size=2, **CLASSIFICATION_TRANSFORMS[kind])
    assert isinstance(ours, torchvision.datasets.VisionDataset)
    assert_same_samples(ours, theirs)


@pytest.mark.parametrize("writer", WRITERS)
def test_vision_base_with_shuffle(dataset_dir: Callable[[str, str], str], writer: str) -> None:
    local = dataset_dir("cifar10", writer)
    kwargs: dict[str, Any] = {
        "batch_size": 3,
        "shuffle": True,
        "shuffle_seed": 7,
        "num_canonical_nodes": 2,
    }
    ours = streamx.vision.base.StreamingVisionDataset(local=local, **kwargs)
    theirs = streaming.vision.base.StreamingVisionDataset(local=local, **kwargs)
    assert_same_samples(ours, theirs)


def _flip_both(pair: tuple[Any, Any]) -> tuple[Any, Any]:
    x, y = pair
    return T.functional.hflip(x), T.functional.vflip(y)


SEGMENTATION_TRANSFORMS: dict[str, dict[str, Any]] = {
    "none": {},
    "all": {
        "joint_transform": _flip_both,
        "transform": T.ToTensor(),
        "target_transform": T.PILToTensor(),
    },
    "target": {"target_transform": np.asarray},
}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("kind", list(SEGMENTATION_TRANSFORMS))
def test_ade20k(dataset_dir: Callable[[str, str], str], writer: str, kind: str) -> None:
    local = dataset_dir("ade20k", writer)
    ours, theirs = _pair("StreamingADE20K", local, batch_size=2, **SEGMENTATION_TRANSFORMS[kind])
    assert_same_samples(ours, theirs)


def _coco_transform(img: Any, size: tuple[int, int], boxes: Any, labels: Any) -> Any:
    return T.functional.pil_to_tensor(img), (size[1], size[0]), boxes * 2, labels + 1


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("transform", [None, _coco_transform])
def test_coco(dataset_dir: Callable[[str, str], str], writer: str, transform: Any) -> None:
    local = dataset_dir("coco", writer)
    ours, theirs = _pair("StreamingCOCO", local, transform=transform, batch_size=4)
    assert_same_samples(ours, theirs)


@pytest.mark.parametrize("cls", ["StreamingCIFAR10", "StreamingImageNet"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 1, "transforms": _joint, "transform": T.PILToTensor()},
        {"batch_size": 1, "transforms": _joint, "target_transform": _double},
        {},  # batch_size is required
    ],
)
def test_argument_errors_match(
    dataset_dir: Callable[[str, str], str], cls: str, kwargs: dict[str, Any]
) -> None:
    local = dataset_dir("cifar10", "streamx")
    errors = []
    for lib in (streamx.vision, streaming.vision):
        with pytest.raises((ValueError, TypeError)) as caught:
            getattr(lib, cls)(local=local, **kwargs)
        errors.append(caught.value)
    ours, theirs = errors
    assert type(ours) is type(theirs)
    if isinstance(theirs, ValueError) and "transform" in str(theirs):
        assert str(ours) == str(theirs)


def test_repr_names_the_class_and_transforms(dataset_dir: Callable[[str, str], str]) -> None:
    ds = streamx.vision.StreamingCIFAR10(
        local=dataset_dir("cifar10", "streamx"), batch_size=1, transform=T.PILToTensor()
    )
    text = repr(ds)
    assert "StreamingCIFAR10" in text and f"Number of datapoints: {len(ds)}" in text
