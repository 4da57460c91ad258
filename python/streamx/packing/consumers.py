"""Who packs which windows: the consumers of a packed stream are the ranks x DataLoader
workers, each dealt windows round-robin."""

from __future__ import annotations

__all__ = ["consumer"]


def consumer() -> tuple[int, int]:
    """(this consumer's id, the number of consumers) over ranks x DataLoader workers."""
    rank, world = 0, 1
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    wid, nworkers = 0, 1
    try:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        if info is not None:
            wid, nworkers = info.id, info.num_workers
    except ImportError:
        pass
    return rank * nworkers + wid, world * nworkers
