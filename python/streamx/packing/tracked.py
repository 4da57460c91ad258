"""Exact resume through DataLoader workers: each packed item travels with its provenance.

A DataLoader worker runs ahead of the training loop (``prefetch_factor`` batches each), so a
worker's own progress overstates what training consumed. Progress is therefore recorded
where batches are handed out, in the loader's process: every item a worker yields carries
the ``(window, index, sequences in window)`` of its sequences; a wrapper around the
loader's ``collate_fn`` takes that provenance off before the user's collate sees the
samples and returns it beside the batch, and the loader's process records it as it yields
the batch. The batches are exactly those a plain DataLoader with the same settings gives.

Why provenance rather than counting batches (as mosaic's ``StreamingDataLoader`` counts
samples) and reconstructing each worker's position from torch's round-robin? A count says
where a worker is only once the main process knows how many sequences every window packs
into, which means packing (reading) every window again in the main process; it also fails
under ``in_order=False``, where the interleaving depends on timing. A worker hands out each
window's sequences in order, so the highest index received per window is an exact resume
point, at any world size and worker count, with nothing to re-derive.

One item per step (``batch_size=None``) with torch's own ``default_convert``: the worker
sends the item's numpy arrays as they are, through its pipe, and this process converts them
(``torch.as_tensor``, no copy). torch would convert them in the worker, and every tensor a
worker sends travels through its own shared-memory segment and file descriptor, which for a
sequence's few kilobytes costs about ten times what packing it does. The items are the same
either way; with ``pin_memory`` the worker converts as before, so that the tensors pin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from torch.utils.data import DataLoader, IterableDataset, default_convert

from streamx.packing.provenance import Provenance, Tagged
from streamx.runtime.loader_workers import PassEnd

__all__ = ["TaggedCollate", "TaggedStream", "tracked_batches"]


class _Source(Protocol):
    def tagged(self) -> Iterator[Tagged]: ...

    def record(self, provenance: Sequence[Provenance]) -> None: ...

    def end_loader_pass(self) -> None: ...


class TaggedStream(IterableDataset[Tagged]):
    """The source's items with their provenance, per DataLoader worker."""

    def __init__(self, source: _Source) -> None:
        self.source = source

    def __iter__(self) -> Iterator[Tagged]:
        return self.source.tagged()


class TaggedCollate:
    """The loader's ``collate_fn`` applied to the untagged items; the provenance of the
    batch is returned beside it. A class, not a closure, so that spawned workers can
    unpickle it."""

    def __init__(
        self, collate_fn: Callable[[Any], Any], batched: bool, convert_later: bool = False
    ) -> None:
        self.collate_fn = collate_fn
        self.batched = batched  # auto-collation: a list of items, else one item
        # The loader's process applies ``default_convert`` (see the module's docstring).
        self.convert_later = convert_later

    def __call__(self, data: Any) -> tuple[list[Provenance], Any]:
        if not self.batched:
            provenance, item = data
            return provenance, item if self.convert_later else self.collate_fn(item)
        tagged: list[Tagged] = data
        return (
            [p for provenance, _ in tagged for p in provenance],
            self.collate_fn([item for _, item in tagged]),
        )


def tracked_batches(source: _Source, loader: DataLoader) -> Iterator[Any]:  # type: ignore[type-arg]
    """The batches ``loader`` gives over ``source``, each recorded when it is yielded here."""
    extra: dict[str, Any] = {"in_order": loader.in_order} if hasattr(loader, "in_order") else {}
    batched = loader.batch_size is not None
    convert_later = (
        not batched
        and loader.collate_fn is default_convert
        and loader.num_workers > 0
        and not loader.pin_memory
    )
    inner: DataLoader = DataLoader(  # type: ignore[type-arg]
        TaggedStream(source),
        batch_size=loader.batch_size,
        drop_last=loader.drop_last,
        collate_fn=TaggedCollate(loader.collate_fn, batched, convert_later),
        num_workers=loader.num_workers,
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor,
        # Each pass starts fresh workers: they must copy the state (epoch, resume point)
        # this process holds now, which persistent workers would not see.
        persistent_workers=False,
        pin_memory_device=loader.pin_memory_device,
        **extra,
    )
    batches = iter(inner)
    # The inner loader's workers joined (torch did if it ran out; a pass left early, or
    # still open at exit, stops them here), their ledger files can go.
    end = PassEnd(batches, source.end_loader_pass)
    try:
        for provenance, batch in batches:
            source.record(provenance)
            yield default_convert(batch) if convert_later else batch  # type: ignore[no-untyped-call]
    finally:
        end()
