"""``StreamingDataLoader``: a torch DataLoader that counts samples for mid-epoch resumption."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from torch import Tensor
from torch.utils.data import DataLoader, default_collate

from streamx.dataset.streaming import UNCOUNTED_KEY, StreamingDataset
from streamx.order.world import World
from streamx.runtime.loader_workers import PassEnd
from streamx.torch.batched import BatchedStream, as_sent, unpack_batch
from streamx.torch.inline import can_read_inline, inline_batches
from streamx.torch.null_collate import collate_samples

__all__ = ["StreamingDataLoader"]


def _length(value: Any) -> int:
    """``len(value)``; for a plain tensor of one or more dimensions its first size, which
    is what torch's ``Tensor.__len__`` returns, without that Python method (about a
    microsecond a batch). Anything else, a 0-d tensor (``len`` raises) and subclasses
    (which may define their own length) included, goes through ``len``."""
    if type(value) is Tensor:
        shape = value.shape
        if shape:
            return shape[0]
    return len(value)


@runtime_checkable
class _TracksOwnProgress(Protocol):
    """A dataset that records in this process what the loader hands out (``PackedDataset``):
    its workers run ahead, so only this process knows what training received."""

    def tracked_batches(self, loader: DataLoader) -> Iterator[Any]: ...  # type: ignore[type-arg]

    def state_dict(self) -> dict[str, object]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


class StreamingDataLoader(DataLoader):  # type: ignore[type-arg]
    """A DataLoader whose ``state_dict`` resumes a :class:`StreamingDataset` mid-epoch.

    It counts the samples this rank has yielded in the current pass; the dataset state
    multiplies that by the number of ranks (divided by ``replication``).

    Over a :class:`StreamingDataset` with torch's default collation, batches cross no
    process boundary sample by sample. When Rust and numpy decode every column (MDS), or
    Arrow and numpy build every batch column by column (Parquet of numbers, strings and
    short binary), and nothing is overridden (and neither ``worker_init_fn`` nor
    ``pin_memory`` is set), the main process reads the batches itself, in the order
    ``num_workers`` workers would give them (:mod:`streamx.torch.inline`); otherwise
    workers send whole batches, their arrays in one buffer (:mod:`streamx.torch.batched`),
    instead of torch tensors in fresh shared memory, and read them column by column where
    the dataset can (MDS columns of fixed width, Parquet row groups: numbers and lists of
    one length straight into arrays).
    Either way the batches are torch's: same samples, order, types, dtypes. On every path a
    null (``None``) that torch's collation refuses raises its error naming the column and the
    sample (:mod:`streamx.torch.null_collate`).

    Over a ``PackedDataset``, ``state_dict`` is the dataset's own, recording the sequences
    this process received, however far the workers ran ahead (:mod:`streamx.packing.tracked`).

    Args:
        *args: ``torch.utils.data.DataLoader``'s arguments.
        batched: ``False`` keeps torch's per-sample path (each worker collates tensors).
        **kwargs: ``torch.utils.data.DataLoader``'s keyword arguments.

    Examples:
        >>> import tempfile
        >>> from streamx import MDSWriter, StreamingDataset
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"x": "int"}) as writer:
        ...     for i in range(4):
        ...         writer.write({"x": i})
        >>> ds = StreamingDataset(local=out, shuffle=False, batch_size=2)
        >>> [b["x"].tolist() for b in StreamingDataLoader(ds, batch_size=2)]
        [[0, 1], [2, 3]]
    """

    def __init__(self, *args: Any, batched: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.num_samples_yielded = 0
        self._batched = batched and self._can_batch()
        self._batched_loader: DataLoader | None = None  # type: ignore[type-arg]
        if self.collate_fn is default_collate:  # the same batches; a null's error named
            self.collate_fn = collate_samples

    def _can_batch(self) -> bool:
        """Whether the batched path gives exactly the per-sample path's batches."""
        return (
            isinstance(self.dataset, StreamingDataset)
            and self.batch_size is not None
            and self.collate_fn is default_collate
        )

    def _inline(self) -> bool:
        """Whether the main process reads the batches itself: no Python runs per sample and
        no worker setting asks for worker processes."""
        return (
            isinstance(self.dataset, StreamingDataset)
            and can_read_inline(self.dataset)
            and self.worker_init_fn is None
            and not self.pin_memory
        )

    def _batched_batches(self) -> DataLoader:  # type: ignore[type-arg]
        """A DataLoader over packed batches, with this one's worker settings (built once, so
        persistent workers persist)."""
        if self._batched_loader is None:
            assert isinstance(self.dataset, StreamingDataset) and self.batch_size is not None
            extra: dict[str, Any] = {"in_order": self.in_order} if hasattr(self, "in_order") else {}
            self._batched_loader = DataLoader(
                BatchedStream(self.dataset, self.batch_size, self.drop_last),
                batch_size=None,
                num_workers=self.num_workers,
                # torch applies collate_fn in the worker: a batch crosses as numpy arrays
                # (one pipe message) and becomes tensors here, unless pinned memory is asked
                # for, which the pin thread gives tensors only.
                collate_fn=unpack_batch if self.pin_memory else as_sent,  # type: ignore[arg-type]
                pin_memory=self.pin_memory,
                timeout=self.timeout,
                worker_init_fn=self.worker_init_fn,
                multiprocessing_context=self.multiprocessing_context,
                generator=self.generator,
                prefetch_factor=self.prefetch_factor,
                persistent_workers=self.persistent_workers,
                pin_memory_device=self.pin_memory_device,
                **extra,
            )
        return self._batched_loader

    def _get_batch_size(self, batch: Any) -> int:
        """Samples in a batch: the length of a mapping's first value, a tensor, or batch[0]."""
        if type(batch) is dict or isinstance(batch, Mapping):  # a dict without the ABC check
            for value in batch.values():
                return _length(value)
            raise ValueError("Batch is empty")
        if isinstance(batch, Tensor):
            return _length(batch)
        return _length(batch[0])

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        self.num_samples_yielded = 0
        if isinstance(self.dataset, StreamingDataset):
            # The workers started for this pass agree on its epoch through this token.
            self.dataset.begin_loader_pass()
        if isinstance(self.dataset, _TracksOwnProgress):
            yield from self.dataset.tracked_batches(self)
            return
        workers: Iterator[Any] | None = None  # torch's iterator, where workers read
        batches: Iterator[Any]
        if not self._batched:
            batches = workers = super().__iter__()
        elif self._inline():
            assert isinstance(self.dataset, StreamingDataset) and self.batch_size is not None
            batches = inline_batches(
                self.dataset,
                num_workers=self.num_workers,
                batch_size=self.batch_size,
                drop_last=self.drop_last,
            )
        else:
            workers = iter(self._batched_batches())
            batches = workers if self.pin_memory else map(unpack_batch, workers)
        # Also when the pass is left early (a break, an error, the iterator closed, collected
        # or kept until exit): its workers are joined then, not whenever torch's iterator is
        # collected, so that the ledger files they leave go with this pass.
        end = PassEnd(
            workers,
            self.dataset.end_loader_pass if isinstance(self.dataset, StreamingDataset) else None,
            keep_workers=self.persistent_workers,
            reading=batches,
        )
        try:
            for batch in batches:
                self.num_samples_yielded += self._get_batch_size(batch)
                yield batch
        finally:
            end()

    def state_dict(self) -> dict[str, Any] | None:
        """The dataset's resumption state after the samples yielded so far, or ``None``."""
        if isinstance(self.dataset, _TracksOwnProgress):
            return dict(self.dataset.state_dict())
        if not isinstance(self.dataset, StreamingDataset):
            return None
        world = World.detect()
        num_samples = self.num_samples_yielded * world.num_ranks
        if self.dataset.replication is not None:
            num_samples //= self.dataset.replication
        mesh = self.dataset.mesh
        if mesh is not None:  # only the dp ranks read distinct samples
            num_samples //= mesh.world_size // mesh.dp
        state = self.dataset.state_dict(num_samples, False)
        if mesh is not None and not mesh.reads_data(world.rank):
            # A skipped stage iterated nothing: its count (0) is not the run's position.
            state[UNCOUNTED_KEY] = (
                f"rank {world.rank} is a pipeline stage that reads no data "
                f"(skip_pipeline_middle, {mesh.to_json()})"
            )
        return state

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Passes a resumption state to the dataset."""
        if isinstance(self.dataset, (StreamingDataset, _TracksOwnProgress)):
            self.dataset.load_state_dict(obj)

    def __del__(self) -> None:
        for loader in (self, getattr(self, "_batched_loader", None)):
            iterator = getattr(loader, "_iterator", None)
            if iterator is not None and hasattr(iterator, "_shutdown_workers"):
                iterator._shutdown_workers()
