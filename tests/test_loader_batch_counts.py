"""``StreamingDataLoader`` counts the samples of each batch as mosaicml-streaming's does.

The count feeds ``num_samples_yielded`` and so the resumption state. Both libraries' loaders
run over the same list dataset with a ``collate_fn`` that builds each kind of batch; the
count, or the error, must be mosaic's for every kind (a batch of neither a mapping nor a
tensor counts its first element: a 2-D numpy array counts its columns, as in mosaic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import streamx

torch = pytest.importorskip("torch")
mosaic = pytest.importorskip("streaming.base.dataloader")
transformers = pytest.importorskip("transformers")

ROWS = list(range(10))


def _kinds() -> dict[str, Callable[[list[int]], Any]]:
    """Per kind of batch, a ``collate_fn`` building it from a list of ints."""
    return {
        "dict of tensors": lambda b: {"x": torch.tensor(b), "y": torch.zeros(len(b), 3)},
        "dict of 2-d tensors": lambda b: {"x": torch.zeros(len(b), 5)},
        "dict of lists": lambda b: {"s": [str(i) for i in b], "x": torch.tensor(b)},
        "dict of arrays": lambda b: {"x": np.zeros((len(b), 2))},
        "dict of a 0-d tensor": lambda b: {"x": torch.tensor(len(b))},
        "empty dict": lambda b: {},
        "batch encoding": lambda b: transformers.BatchEncoding({"ids": torch.zeros(len(b), 7)}),
        "tensor": lambda b: torch.zeros(len(b), 4),
        "0-d tensor": lambda b: torch.tensor(len(b)),
        "parameter": lambda b: torch.nn.Parameter(torch.zeros(len(b), 2)),
        "list of tensors": lambda b: [torch.zeros(len(b), 6), torch.tensor(b)],
        "tuple of lists": lambda b: ([*b, 0], b),
        "2-d array": lambda b: np.zeros((len(b), 9)),
    }


def _counts(loader: Any) -> list[int] | type[Exception]:
    """The running count after each batch, or the type of the error counting raised."""
    counts: list[int] = []
    try:
        for _ in loader:
            counts.append(loader.num_samples_yielded)
    except (TypeError, ValueError) as error:
        return type(error)
    return counts


@pytest.mark.parametrize("kind", sorted(_kinds()))
def test_counts_are_mosaics(kind: str) -> None:
    collate = _kinds()[kind]
    # 10 rows in batches of 4: a short last batch too.
    ours = streamx.StreamingDataLoader(ROWS, batch_size=4, collate_fn=collate)
    theirs = mosaic.StreamingDataLoader(ROWS, batch_size=4, collate_fn=collate)
    expected = _counts(theirs)
    assert _counts(ours) == expected
    assert expected != []
