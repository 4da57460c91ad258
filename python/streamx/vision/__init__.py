"""Computer-vision datasets with mosaicml-streaming's ``streaming.vision`` classes' API.

``StreamingCIFAR10``, ``StreamingImageNet`` (and ``streamx.vision.base``) need
torchvision; it is imported only when one of them is first used, so ``StreamingADE20K``
and ``StreamingCOCO`` work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamx.lazy_names import lazy_names
from streamx.vision.ade20k import StreamingADE20K
from streamx.vision.coco import StreamingCOCO

if TYPE_CHECKING:
    from streamx.vision.cifar10 import StreamingCIFAR10
    from streamx.vision.imagenet import StreamingImageNet

__all__ = ["StreamingADE20K", "StreamingCIFAR10", "StreamingCOCO", "StreamingImageNet"]


# Lazy because torchvision is an optional dependency: not for an import cycle.
_LAZY = {
    "StreamingCIFAR10": "streamx.vision.cifar10",
    "StreamingImageNet": "streamx.vision.imagenet",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
