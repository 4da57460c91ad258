"""torch's dataset base classes, or stand-ins without torch; they live in
:mod:`streamx.runtime`, below ``dataset/``, whose datasets derive from them."""

from streamx.runtime.torch_bases import TorchDataset, TorchIterableDataset

__all__ = ["TorchDataset", "TorchIterableDataset"]
