"""Creates, iterates and drops many datasets in one process; prints descriptor and memory use.

Usage: ``python dist_fd_probe.py LOCAL INSTANCES LOADERS``. Run by ``test_resources.py`` in a
fresh interpreter, with whatever torchrun variables the test sets. Prints one JSON line.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

from dist_harness import DS, LOADER

import streamx
from streamx.runtime.run_dirs import runs_base
from streamx.torch.dataloader import StreamingDataLoader


def fds() -> int:
    """Open descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    """Resident set size in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def one_instance(local: str) -> list[int]:
    """Builds a dataset, takes 5 samples of its first epoch, round-trips a state, drops it."""
    ds = streamx.StreamingDataset(local=local, **DS)
    it = iter(ds)
    head = [int(next(it)["id"]) for _ in range(5)]
    state = ds.state_dict(5, False)
    ds.load_state_dict(state)
    assert ds.state_dict(0, False)["sample_in_epoch"] == 5
    del it, ds
    return head


def one_loader(local: str) -> list[int]:
    """A DataLoader with 2 fork workers, abandoned after 2 batches."""
    ds = streamx.StreamingDataset(local=local, **DS)
    loader = StreamingDataLoader(ds, batch_size=4, **LOADER)
    ids: list[int] = []
    for step, batch in enumerate(loader):
        ids += batch["id"].tolist()
        if step == 1:
            break
    del loader, ds
    return ids


def main(local: str, instances: int, loaders: int) -> dict[str, Any]:
    """Warms up, then measures descriptors and RSS across ``instances`` datasets."""
    first = one_instance(local)
    first_loader = one_loader(local)
    for _ in range(10):
        one_instance(local)
    gc.collect()
    fd0, rss0 = fds(), rss_kib()
    same_order = True
    for _ in range(instances):
        same_order &= one_instance(local) == first  # every new instance starts at epoch 0
    gc.collect()
    fd1, rss1 = fds(), rss_kib()
    for _ in range(loaders):
        same_order &= one_loader(local) == first_loader
    gc.collect()
    fd2 = fds()
    # Two live instances on one directory in one process do not share an epoch counter.
    a = streamx.StreamingDataset(local=local, **DS)
    b = streamx.StreamingDataset(local=local, **DS)
    epochs_a = [list(a)[:5] for _ in range(2)]
    independent = [int(s["id"]) for s in list(b)[:5]] == first
    independent &= [int(s["id"]) for s in epochs_a[0]] == first and a.next_epoch == 2
    independent &= b.next_epoch == 1
    live_runs = len(os.listdir(runs_base([local])))
    del a, b
    gc.collect()
    left = os.listdir(runs_base([local]))
    return {
        "fd_before": fd0,
        "fd_after": fd1,
        "fd_after_loaders": fd2,
        "rss_before_kib": rss0,
        "rss_after_kib": rss1,
        "same_order": same_order,
        "independent": independent,
        "live_runs": live_runs,
        "runs_left": left,
    }


if __name__ == "__main__":
    result = main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(result))
