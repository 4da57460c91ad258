"""Collectives that work with or without ``torch.distributed``: mosaicml-streaming's helpers.

Ranks come from torchrun's environment variables, as in mosaicml-streaming. The collectives
act only when the user has initialised a process group; a process that never imported
``torch.distributed`` cannot have one, so this module does not import torch to find out.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any, TypeVar

__all__ = [
    "all_gather",
    "all_gather_object",
    "barrier",
    "broadcast",
    "get_local_rank",
    "get_local_world_size",
    "get_rank",
    "get_world_size",
    "maybe_init_dist",
]

T = TypeVar("T")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError as err:
        raise ValueError(f"Environment variable {name} must be an integer, got {value!r}") from err


def get_rank() -> int:
    """This process's rank in ``[0, WORLD_SIZE)``, from ``RANK`` (default 0)."""
    return _env_int("RANK", 0)


def get_world_size() -> int:
    """Processes in the job, from ``WORLD_SIZE`` (default 1)."""
    return _env_int("WORLD_SIZE", 1)


def get_local_rank() -> int:
    """This process's rank on its node, from ``LOCAL_RANK`` (default 0)."""
    return _env_int("LOCAL_RANK", 0)


def get_local_world_size() -> int:
    """Processes on this node, from ``LOCAL_WORLD_SIZE`` (default 1)."""
    return _env_int("LOCAL_WORLD_SIZE", 1)


def _active() -> ModuleType | None:
    """``torch.distributed`` when a process group is up, else ``None``."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def barrier() -> None:
    """Waits for every rank, when a process group is up; otherwise returns at once."""
    dist = _active()
    if dist is not None:
        dist.barrier()


def broadcast(tensor: Any, src: int) -> None:
    """Copies ``tensor`` from rank ``src`` into every rank's ``tensor`` (no-op without a group).

    Args:
        tensor: The data on ``src``; the buffer that receives it elsewhere.
        src: The sending rank.
    """
    dist = _active()
    if dist is not None:
        dist.broadcast(tensor, src)


def all_gather(tensor_list: list[Any], tensor: Any) -> None:
    """Fills ``tensor_list[r]`` with rank ``r``'s ``tensor`` (no-op without a group).

    Args:
        tensor_list: One correctly sized output tensor per rank.
        tensor: This rank's contribution.
    """
    dist = _active()
    if dist is not None:
        dist.all_gather(tensor_list, tensor)


def all_gather_object(obj: T) -> list[T]:
    """Every rank's ``obj``, indexed by rank.

    Args:
        obj: A picklable object.

    Returns:
        ``[obj]`` in a one-process job.

    Raises:
        RuntimeError: ``WORLD_SIZE`` is above 1 but no process group is up.

    Examples:
        >>> all_gather_object({"rank": get_rank()})
        [{'rank': 0}]
    """
    dist = _active()
    if dist is not None:
        gathered: list[Any] = [None] * get_world_size()
        dist.all_gather_object(gathered, obj)
        return gathered
    world_size = get_world_size()
    if world_size == 1:
        return [obj]
    raise RuntimeError(
        f"WORLD_SIZE is {world_size} but torch.distributed is not available or no process "
        "group is initialized; initialize one (or call maybe_init_dist()) first."
    )


def maybe_init_dist() -> bool:
    """Starts a process group from the environment if the job has several ranks and none is up.

    Uses NCCL when CUDA is available, Gloo otherwise; needs torchrun's ``MASTER_ADDR`` and
    ``MASTER_PORT``.

    Returns:
        Whether this call started the group (the caller then destroys it).
    """
    if get_world_size() == 1 or _active() is not None:
        return False
    import torch  # torch is optional; only a multi-rank job without a group needs it
    import torch.distributed as dist

    if not dist.is_available():
        return False
    nccl = torch.cuda.is_available() and dist.is_nccl_available()
    dist.init_process_group(
        backend="nccl" if nccl else "gloo", rank=get_rank(), world_size=get_world_size()
    )
    return True
