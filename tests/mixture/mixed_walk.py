"""One segment of a kill -9 resume walk over packed mixed documents.

    python mixed_walk.py SPEC.json

Builds a ``MixedDataset`` over real ``StreamingDataset`` sources (the MDS directories of the
spec's ``root``), packs it with ``PackedDataset`` (``shuffle=False``: the mixed order) and
reads it through a ``StreamingDataLoader`` with the spec's workers, in ``world`` ranks: this
launcher forks one process per rank (torch.distributed on gloo) when ``world > 1``. Each
rank loads ``load_state`` (the ranks' states merged) if given; then, step by step, the ranks
agree (``all_reduce``) whether any has a sequence left, and each commits atomically
``<ckpt>/rank<r>/step<t>.json``: the global step ``t``, its sequence's tokens (``None``
once it has none left) and its loader state. At the end each writes ``done.json``.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from mixture_data import mixed

from streamx import PackedDataset, StreamingDataLoader


def _commit(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def packed(root: Path, spec: dict[str, Any]) -> PackedDataset:
    """The packed mixture the walk reads."""
    return PackedDataset(
        mixed(root, spec["points"], streaming=True, **spec["mixture"]), **spec["packing"]
    )


def _any_left(has: bool, world: int) -> bool:
    if world == 1:
        return has
    flag = torch.tensor([int(has)])
    dist.all_reduce(flag)  # also keeps the ranks in step, as DDP's gradient sync does
    return bool(flag.item())


def run_rank(spec: dict[str, Any], rank: int) -> None:
    """The body of one rank."""
    world = spec["world"]
    if world > 1:
        os.environ.update(
            RANK=str(rank),
            WORLD_SIZE=str(world),
            LOCAL_RANK=str(rank),
            LOCAL_WORLD_SIZE=str(world),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(spec["port"]),
        )
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    workers = spec["workers"]
    loader = StreamingDataLoader(
        packed(Path(spec["root"]), spec),
        batch_size=None,
        num_workers=workers,
        multiprocessing_context="fork" if workers else None,
    )
    if spec["load_state"]:
        loader.load_state_dict(json.loads(Path(spec["load_state"]).read_text()))
    ckpt = Path(spec["ckpt"]) / f"rank{rank}"
    ckpt.mkdir(parents=True, exist_ok=True)
    step = spec["start_step"]
    items = iter(loader)
    while True:
        seq = next(items, None)
        if not _any_left(seq is not None, world):
            break
        step += 1
        tokens = None if seq is None else seq["input_ids"][: int(seq["num_tokens"])].tolist()
        time.sleep(spec["step_s"])  # the step's compute
        record = {"step": step, "tokens": tokens, "state": loader.state_dict()}
        _commit(ckpt / f"step{step:06d}.json", record)
    _commit(ckpt / "done.json", {"steps": step})
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    if spec["world"] == 1:
        run_rank(spec, 0)
        return 0
    pids = []
    for rank in range(spec["world"]):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                run_rank(spec, rank)
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        pids.append(pid)
    for _ in pids:
        _, status = os.wait()
        if os.waitstatus_to_exitcode(status) != 0:
            os.killpg(os.getpgrp(), signal.SIGKILL)  # as torchrun tears a failed job down
    return 0


if __name__ == "__main__":
    sys.exit(main())
