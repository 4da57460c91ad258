"""The public surface of streamx.text/vision/multimodal matches mosaicml-streaming 0.13.0:
module paths, ``__all__``, constructor signatures (names, kinds and defaults) and bases;
and importing the packages loads neither transformers nor torchvision."""

from __future__ import annotations

import doctest
import importlib
import inspect
import subprocess
import sys

import pytest

pytestmark = pytest.mark.compat

pytest.importorskip("torchvision")
pytest.importorskip("transformers")

import streamx  # noqa: E402

MODULES = [
    "text",
    "text.c4",
    "text.enwiki",
    "text.pile",
    "vision",
    "vision.base",
    "vision.cifar10",
    "vision.imagenet",
    "vision.ade20k",
    "vision.coco",
]
CLASSES = [
    "text.StreamingC4",
    "text.StreamingPile",
    "text.StreamingEnWiki",
    "vision.base.StreamingVisionDataset",
    "vision.StreamingCIFAR10",
    "vision.StreamingImageNet",
    "vision.StreamingADE20K",
    "vision.StreamingCOCO",
    "multimodal.StreamingInsideWebVid",
    "multimodal.StreamingOutsideGIWebVid",
    "multimodal.StreamingOutsideDTWebVid",
    "vision.convert.base.convert_image_class_dataset",
]


def _both(path: str) -> tuple[object, object]:
    module, _, name = path.rpartition(".")
    ours = getattr(importlib.import_module(f"streamx.{module}"), name)
    theirs = getattr(importlib.import_module(f"streaming.{module}"), name)
    return ours, theirs


@pytest.mark.parametrize("module", MODULES)
def test_all_matches(module: str) -> None:
    ours = importlib.import_module(f"streamx.{module}")
    theirs = importlib.import_module(f"streaming.{module}")
    assert sorted(ours.__all__) == sorted(theirs.__all__)
    for name in ours.__all__:
        getattr(ours, name)


def test_multimodal_names() -> None:
    import streaming.multimodal

    import streamx.multimodal

    theirs = {n for n, v in vars(streaming.multimodal).items() if inspect.isclass(v)}
    assert theirs == set(streamx.multimodal.__all__)


STREAMX_ONLY = {"zero_copy", "mesh"}


@pytest.mark.parametrize("path", CLASSES)
def test_signature_matches(path: str) -> None:
    ours, theirs = _both(path)

    def shape(obj: object) -> list[tuple[str, object, object]]:
        params = inspect.signature(obj).parameters.values()  # type: ignore[arg-type]
        # streamx's own keyword-only extensions of StreamingDataset (with defaults).
        return [(p.name, p.kind, p.default) for p in params if p.name not in STREAMX_ONLY]

    assert shape(ours) == shape(theirs)


@pytest.mark.parametrize("path", CLASSES[:-1])
def test_bases(path: str) -> None:
    from torchvision.datasets import VisionDataset

    ours, theirs = _both(path)
    assert isinstance(ours, type) and isinstance(theirs, type)
    assert issubclass(ours, streamx.StreamingDataset)
    assert issubclass(ours, VisionDataset) == issubclass(theirs, VisionDataset)


def test_import_is_light() -> None:
    code = (
        "import sys, streamx.text, streamx.vision, streamx.multimodal, streamx.vision.convert;"
        "print(sorted(m for m in ('transformers', 'torchvision') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_vision_lazy_names_and_unknown_attribute() -> None:
    import streamx.vision
    from streamx.vision.cifar10 import StreamingCIFAR10

    assert streamx.vision.StreamingCIFAR10 is StreamingCIFAR10
    with pytest.raises(AttributeError, match="StreamingMNIST"):
        streamx.vision.StreamingMNIST  # noqa: B018


# Modules whose examples run here; the other examples need a real dataset and are skipped.
RUNNABLE_EXAMPLES = {"vision.base", "vision.convert.base"}


@pytest.mark.parametrize(
    "module", [*MODULES, "vision.convert.base", "multimodal.webvid", "text._tokenized"]
)
def test_docstring_examples_pass(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"streamx.{module}"))
    assert result.failed == 0
    assert (result.attempted > 0) == (module in RUNNABLE_EXAMPLES)
