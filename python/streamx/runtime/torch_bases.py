"""torch's dataset base classes, or stand-ins when torch is not installed.

Importing this module imports torch; only the dataset classes do, and ``streamx`` exposes
them lazily so that ``import streamx`` (and writing data) never does.
"""

from __future__ import annotations

__all__ = ["TorchDataset", "TorchIterableDataset"]

try:
    from torch.utils.data import Dataset as TorchDataset
    from torch.utils.data import IterableDataset as TorchIterableDataset
except ImportError:  # streamx works without torch; only the DataLoader needs it

    class TorchDataset:  # type: ignore[no-redef]
        """Stand-in base when torch is absent."""

    class TorchIterableDataset:  # type: ignore[no-redef]
        """Stand-in base when torch is absent."""
