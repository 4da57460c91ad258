"""torch is optional: datasets subclass torch's dataset types when torch is installed."""

from __future__ import annotations

from typing import Any

__all__ = ["TorchDataset", "TorchIterableDataset", "get_worker_info"]

try:
    from torch.utils.data import Dataset as TorchDataset
    from torch.utils.data import IterableDataset as TorchIterableDataset
    from torch.utils.data import get_worker_info
except ImportError:  # streamx works without torch; only the DataLoader needs it

    class TorchDataset:  # type: ignore[no-redef]
        """Stand-in base when torch is absent."""

    class TorchIterableDataset:  # type: ignore[no-redef]
        """Stand-in base when torch is absent."""

    def get_worker_info() -> Any:  # type: ignore[misc]
        """Without torch there are no DataLoader workers."""
        return None
