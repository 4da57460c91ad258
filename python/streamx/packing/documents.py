"""How many documents a map-style source holds, whatever the world reading it, and the end of
a DataLoader's pass over them."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from streamx.dataset.streaming import StreamingDataset

__all__ = ["Documents", "EndsLoaderPass", "document_count", "end_loader_pass", "read_documents"]


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


def read_documents(documents: Documents, ids: list[int]) -> list[Any]:
    """``[documents[i] for i in ids]``, in one call where the source reads batches
    (``__getitems__``: a ``StreamingDataset`` or ``LocalDataset`` decodes them in one call
    into Rust), else one by one."""
    many = getattr(documents, "__getitems__", None)
    if many is None:
        return [documents[i] for i in ids]
    return list(many(ids))


@runtime_checkable
class EndsLoaderPass(Protocol):
    """A dataset told when a DataLoader's pass over it ends (``StreamingDataset``, and the
    packed and mixed datasets over such)."""

    def end_loader_pass(self) -> None: ...


def end_loader_pass(documents: object) -> None:
    """Ends a DataLoader's pass over ``documents``, once its workers are gone: each
    ``StreamingDataset`` under them releases what the exited workers left in its cache
    ledger. Documents without a ledger (a ``LocalDataset``, a list) have nothing to end."""
    if isinstance(documents, EndsLoaderPass):
        documents.end_loader_pass()
