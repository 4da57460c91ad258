"""Token packing: documents of token ids packed into fixed-length sequences."""

from __future__ import annotations

from streamx.packing.dataset import PackedDataset
from streamx.packing.pack import pack_best_fit, pack_concat

__all__ = ["PackedDataset", "pack_best_fit", "pack_concat"]
