"""How many documents a map-style source holds, whatever the world reading it."""

from __future__ import annotations

from typing import Any, Protocol

from streamx.dataset.streaming import StreamingDataset

__all__ = ["Documents", "document_count"]


class Documents(Protocol):
    """Map-style documents: ``len`` and ``[]``."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def document_count(documents: Documents) -> int:
    """The indices ``documents[i]`` takes. A ``StreamingDataset``'s ``len`` is one rank's
    share of its epoch, but its ``[]`` takes any of its ``size`` samples on every rank: a
    packer or mixer that deals work out itself must count them all, or each rank would see
    only the first ``1 / world`` of the data."""
    if isinstance(documents, StreamingDataset):
        return int(documents.size)
    return len(documents)
