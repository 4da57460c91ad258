"""What mosaicml-streaming 0.13.0 would yield on each rank, computed without launching it.

Running mosaicml-streaming itself with several ranks needs its shared memory, its own
``torch.distributed`` initialisation and barriers across processes; instead this builds one
of its datasets in the test process and calls its ``generate_work`` with the world of each
rank, then replays how a torch DataLoader pulls batches from its workers: round-robin over
the workers that still have data, each worker cutting its own id stream into batches.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

_DATASETS: dict[tuple[str, str], Any] = {}
_BUILD_ATTEMPTS = 20


def _build_mosaic(local: str, kwargs: dict[str, Any]) -> Any:
    import streaming

    def build() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return streaming.StreamingDataset(local=local, **kwargs)

    # mosaicml-streaming looks for a free shared-memory prefix, then creates it: another
    # process on the host building one of its datasets in between (a concurrent test session
    # or benchmark) takes it first, and ours fails with FileExistsError. A retry walks on to
    # the next free prefix.
    for _ in range(_BUILD_ATTEMPTS - 1):
        with contextlib.suppress(FileExistsError):
            return build()
        time.sleep(random.uniform(0.01, 0.1))
    return build()


def _mosaic_dataset(local: str, ds_kwargs: Mapping[str, Any]) -> Any:
    kwargs = {k: v for k, v in ds_kwargs.items() if k != "replication"}
    key = (local, json.dumps(kwargs, sort_keys=True))
    if key not in _DATASETS:
        _DATASETS[key] = _build_mosaic(local, kwargs)
    return _DATASETS[key]


def loader_order(worker_ids: list[NDArray[np.int64]], batch_size: int) -> list[list[int]]:
    """Batches in the order a DataLoader yields them from workers with these id streams."""
    queues = []
    for ids in worker_ids:
        real = ids[ids >= 0].tolist()
        queues.append([real[i : i + batch_size] for i in range(0, len(real), batch_size)])
    out: list[list[int]] = []
    active = list(range(len(queues)))
    while active:
        for worker in list(active):
            if queues[worker]:
                out.append(queues[worker].pop(0))
            else:
                active.remove(worker)
    return out


def rank_batches(
    local: str,
    ds_kwargs: Mapping[str, Any],
    *,
    nodes: int,
    ranks_per_node: int,
    workers: int | list[int],
    epoch: int,
    sample_in_epoch: int = 0,
    initial_physical_nodes: int | None = None,
) -> list[list[list[int]]]:
    """mosaicml-streaming's DataLoader batches for every rank of the job, in order."""
    from streaming.base.batching import generate_work
    from streaming.base.world import World

    ds = _mosaic_dataset(local, ds_kwargs)
    ds.initial_physical_nodes = initial_physical_nodes
    num_ranks = nodes * ranks_per_node
    per_rank = workers if isinstance(workers, list) else [workers] * num_ranks
    replication = ds_kwargs.get("replication")
    out = []
    for rank in range(num_ranks):
        num_workers = max(per_rank[rank], 1)
        world = World(nodes, ranks_per_node, num_workers, rank * num_workers)
        if replication:
            world = world.replicate(replication)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            work = generate_work(ds.batching_method, ds, world, epoch, sample_in_epoch)
        mine = work[world.node, world.rank_of_node]
        out.append(loader_order([mine[w].reshape(-1) for w in range(num_workers)], ds.batch_size))
    return out


def job_batches(spec: dict[str, Any], *, epoch: int, **resume: Any) -> list[list[list[int]]]:
    """``rank_batches`` for the world, workers and dataset of a ``dist_launch`` job spec."""
    nodes, ranks_per_node = (
        (1, 1) if spec.get("single") else (spec["nodes"], spec["ranks_per_node"])
    )
    default = spec.get("loader", {}).get("num_workers", 0)
    per_rank = spec.get("per_rank", {})
    workers = [
        per_rank.get(str(rank), {}).get("num_workers", default)
        for rank in range(nodes * ranks_per_node)
    ]
    return rank_batches(
        spec["locals"][0], spec["dataset"], nodes=nodes, ranks_per_node=ranks_per_node,
        workers=workers, epoch=epoch, **resume,
    )  # fmt: skip


def global_steps(per_rank: list[list[list[int]]]) -> list[Counter[int]]:
    """Step ``t``'s ids over all ranks (each rank's ``t``-th batch), as multisets."""
    steps = max((len(b) for b in per_rank), default=0)
    return [
        Counter(i for batches in per_rank if t < len(batches) for i in batches[t])
        for t in range(steps)
    ]


def flat(per_rank: list[list[list[int]]]) -> Counter[int]:
    """Every id of every rank, as a multiset."""
    return Counter(i for batches in per_rank for batch in batches for i in batch)
