"""``StreamingDataLoader``: a torch DataLoader that counts samples for mid-epoch resumption."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from torch import Tensor
from torch.utils.data import DataLoader

from streamx.dataset.streaming import StreamingDataset
from streamx.order.world import World

__all__ = ["StreamingDataLoader"]


class StreamingDataLoader(DataLoader):  # type: ignore[type-arg]
    """A DataLoader whose ``state_dict`` resumes a :class:`StreamingDataset` mid-epoch.

    It counts the samples this rank has yielded in the current pass; the dataset state
    multiplies that by the number of ranks (divided by ``replication``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.num_samples_yielded = 0

    def _get_batch_size(self, batch: Any) -> int:
        """Samples in a batch: the length of a mapping's first value, a tensor, or batch[0]."""
        if isinstance(batch, Mapping):
            for value in batch.values():
                return len(value)
            raise ValueError("Batch is empty")
        if isinstance(batch, Tensor):
            return len(batch)
        return len(batch[0])

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        self.num_samples_yielded = 0
        if isinstance(self.dataset, StreamingDataset):
            # The workers started for this pass agree on its epoch through this token.
            self.dataset._state.begin_pass()
        for batch in super().__iter__():
            self.num_samples_yielded += self._get_batch_size(batch)
            yield batch

    def state_dict(self) -> dict[str, Any] | None:
        """The dataset's resumption state after the samples yielded so far, or ``None``."""
        if not isinstance(self.dataset, StreamingDataset):
            return None
        num_samples = self.num_samples_yielded * World.detect().num_ranks
        if self.dataset.replication is not None:
            num_samples //= self.dataset.replication
        return self.dataset.state_dict(num_samples, False)

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Passes a resumption state to the dataset."""
        if isinstance(self.dataset, StreamingDataset):
            self.dataset.load_state_dict(obj)

    def __del__(self) -> None:
        iterator = getattr(self, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
