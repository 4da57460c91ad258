"""The interface every sample reader offers to datasets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["SampleReader"]


class SampleReader(Protocol):
    """Global sample id -> decoded sample dict, for the shards of one dataset."""

    num_samples: int
    # ``get`` with a negative index counting from the end, when it is all ``ds[i]`` needs.
    # Answers None, like ``get_if_local``, while the sample's shard is not on local disk.
    fast_get: Callable[[int], dict[str, Any] | None] | None

    def get(self, index: int) -> dict[str, Any]:
        """Returns sample ``index`` (``0 <= index < num_samples``)."""
        ...

    def get_if_local(self, index: int) -> dict[str, Any] | None:
        """Like :meth:`get`, but ``None`` while the sample's shard is not on local disk
        (being downloaded): an answer, not an error."""
        ...

    def get_many(self, indices: list[int], fallback: Any) -> list[Any]:
        """Returns the samples ``indices``, using ``fallback(i)`` for any not yet local."""
        ...

    def evict(self, shard: int) -> None:
        """Forgets any open handle on ``shard`` so its files may be replaced or deleted."""
        ...
