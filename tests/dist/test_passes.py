"""DataLoader passes that are cut short, plain DataLoaders, and mixed direct iteration.

mosaicml-streaming makes every worker meet at a barrier before an epoch starts, so all of
them agree on the epoch even when a pass is abandoned early. streamx has no barrier: the
workers of a ``StreamingDataLoader`` pass agree through a per-pass token, and a worker that
never got to start the previous pass (shut down while still booting) must not lag behind.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dist_harness import DS, LOADER
from dist_oracle import rank_batches

import streamx

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs


def _slow_second_worker(flag: str, worker_id: int) -> None:
    """While ``flag`` exists, worker 1 stays in start-up until the DataLoader kills it."""
    if worker_id == 1 and os.path.exists(flag):
        time.sleep(60)


def _batches(loader: Any, limit: int | None = None) -> list[list[int]]:
    out = []
    for batch in loader:
        out.append(batch["id"].tolist())
        if len(out) == limit:
            break
    return out


def _expected(local: str, workers: int, epoch: int) -> list[list[int]]:
    return rank_batches(local, DS, nodes=1, ranks_per_node=1, workers=workers, epoch=epoch)[0]


def test_pass_cut_short_before_a_worker_started(
    node_dirs: Callable[..., list[str]], tmp_path: Path
) -> None:
    """Worker 1 is killed in start-up when the first pass is abandoned after one batch; the
    next pass must still be a whole, correct epoch 1 on both workers."""
    local = node_dirs(1)[0]
    flag = tmp_path / "slow"
    flag.touch()
    ds = streamx.StreamingDataset(local=local, **DS)
    slow = functools.partial(_slow_second_worker, str(flag))
    loader = streamx.StreamingDataLoader(ds, batch_size=4, **LOADER, worker_init_fn=slow)
    head = _batches(loader, limit=1)
    assert head == _expected(local, 2, 0)[:1]
    flag.unlink()
    assert _batches(loader) == _expected(local, 2, 1)
    state = loader.state_dict()
    assert state is not None
    assert state["epoch"] == 1
    assert _batches(loader) == _expected(local, 2, 2)


def test_plain_dataloader_epochs(node_dirs: Callable[..., list[str]]) -> None:
    """A plain torch DataLoader (no pass token) with 2 workers: epochs 0 and 1 as mosaic's."""
    local = node_dirs(1)[0]
    ds = streamx.StreamingDataset(local=local, **DS)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, **LOADER)
    assert _batches(loader) == _expected(local, 2, 0)
    assert _batches(loader) == _expected(local, 2, 1)
    assert ds.next_epoch == 2


def test_direct_iteration_then_loader(node_dirs: Callable[..., list[str]]) -> None:
    """Peeking at the dataset in the main process starts an epoch, as in mosaicml-streaming;
    the DataLoader passes that follow are epochs 1 and 2."""
    local = node_dirs(1)[0]
    ds = streamx.StreamingDataset(local=local, **DS)
    first = next(iter(ds))
    assert int(first["id"]) == _expected(local, 1, 0)[0][0]
    loader = streamx.StreamingDataLoader(ds, batch_size=4, **LOADER)
    assert _batches(loader) == _expected(local, 2, 1)
    assert _batches(loader) == _expected(local, 2, 2)
    assert ds.next_epoch == 3


def test_loader_then_direct_iteration_then_plain_loader(
    node_dirs: Callable[..., list[str]],
) -> None:
    """After a StreamingDataLoader pass, iterating the dataset in the main process and then a
    plain DataLoader each start the next epoch (the pass token does not leak into them)."""
    local = node_dirs(1)[0]
    ds = streamx.StreamingDataset(local=local, **DS)
    loader = streamx.StreamingDataLoader(ds, batch_size=4, **LOADER)
    assert _batches(loader) == _expected(local, 2, 0)
    direct = [int(s["id"]) for s in ds]
    assert direct == [i for b in _expected(local, 1, 1) for i in b]
    plain = torch.utils.data.DataLoader(ds, batch_size=4, **LOADER)
    assert _batches(plain) == _expected(local, 2, 2)
    assert _batches(loader) == _expected(local, 2, 3)
    assert ds.next_epoch == 4
