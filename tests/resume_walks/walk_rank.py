"""One segment of a resume walk: a training job of ``world`` ranks, each a real process.

Usage: ``python walk_rank.py SPEC.json``. This launcher imports torch and streamx once, then
forks one process per rank (as torchrun starts one per device) with ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``
set; ranks of simulated node ``n`` read the dataset from their own copy ``locals[n]``. The
launcher, its ranks and their DataLoader workers share one process group (the driver starts
the launcher in a new session), so ``killpg(SIGKILL)`` ends the whole job at once.

Each rank joins a gloo group (its ``all_reduce`` per step stands in for DDP's gradient sync,
so no rank runs ahead of the others by more than a step), builds a ``StreamingDataset``
(``batch_size`` = global batch / world), loads the spec's ``load_state`` if any, and trains:
after every step it commits, atomically (a temporary file renamed into place), a checkpoint
``<ckpt>/rank<r>/step<t>.json`` holding the global step ``t`` (counted from the start of the
epoch), the ids of the step's batch, and its state dict after the step. The variants:

- ``dataset``: the ranks iterate the dataset itself and cut batches; the state is
  ``dataset.state_dict(t * global_batch, from_beginning=True)``, as Composer asks for it;
- ``dataset-relative``: the same, with ``state_dict(samples since the resume, False)``;
- ``loader<k>``: a ``StreamingDataLoader`` with ``k`` workers (streamx reads the batches
  in the main process in the order ``k`` workers would give them); the state is
  ``loader.state_dict()``;
- ``loader<k>-procs``: the same with a ``worker_init_fn``, so that ``k`` real worker
  processes (forked) decode the batches and prefetch ahead of training;
- ``loader<k>-torch``: ``batched=False``, torch's per-sample path in ``k`` worker processes.

A rank that finishes the epoch works ``tail_s`` seconds more, then writes
``<ckpt>/rank<r>/done.json`` with its step count.
Every sample's ``text`` column is checked against its ``id``.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import streamx
from streamx import StreamingDataLoader

_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def sample_text(sample_id: int) -> str:
    """The ``text`` column written for sample ``sample_id``."""
    return f"sample-{sample_id}"


def _commit(path: Path, record: dict[str, Any]) -> None:
    """Writes ``record`` to ``path`` so that a reader sees all of it or nothing."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as file:
        json.dump(record, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)


def _noop_worker_init(_worker_id: int) -> None:
    """Any ``worker_init_fn`` makes the loader start real worker processes."""


def _ids(batch: Any) -> list[int]:
    """The batch's ids, after checking every sample's text against its id."""
    ids = [int(i) for i in batch["id"]]
    texts = list(batch["text"])
    assert texts == [sample_text(i) for i in ids], (ids, texts)
    return ids


def _dataset_batches(dataset: streamx.StreamingDataset, size: int) -> Iterator[dict[str, Any]]:
    """The rank's samples cut into batches of ``size``, as a training loop without a
    DataLoader would (the dataset yields a multiple of ``size`` here: no ragged tail)."""
    batch: list[dict[str, Any]] = []
    for sample in dataset:
        batch.append(sample)
        if len(batch) == size:
            yield {key: [s[key] for s in batch] for key in ("id", "text")}
            batch = []
    assert not batch, f"a ragged last batch of {len(batch)}"


def _loader(
    dataset: streamx.StreamingDataset, variant: str, batch_size: int
) -> StreamingDataLoader:
    name, _, kind = variant.partition("-")
    workers = int(name.removeprefix("loader"))
    kwargs: dict[str, Any] = {"batch_size": batch_size, "num_workers": workers}
    if workers:
        kwargs["multiprocessing_context"] = "fork"
    if kind == "procs":
        kwargs["worker_init_fn"] = _noop_worker_init
    elif kind == "torch":
        kwargs["batched"] = False
    elif kind:
        raise ValueError(f"unknown variant {variant!r}")
    return StreamingDataLoader(dataset, **kwargs)


def rank_main(spec: dict[str, Any], rank: int) -> None:
    """The body of one rank process."""
    world, rpn = spec["world"], spec["ranks_per_node"]
    for name in _WORLD_VARS:
        os.environ.pop(name, None)
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank % rpn),
        LOCAL_WORLD_SIZE=str(rpn),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(spec["master_port"]),
    )
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=spec["timeout"]))
    global_batch = spec["global_batch"]
    batch_size = global_batch // world
    dataset = streamx.StreamingDataset(
        local=spec["locals"][rank // rpn], batch_size=batch_size, **spec["dataset"]
    )
    variant: str = spec["variant"]
    loader = None if variant.startswith("dataset") else _loader(dataset, variant, batch_size)
    start_step = 0
    if spec.get("load_state"):
        state = json.loads(Path(spec["load_state"]).read_text())
        start_step = state["sample_in_epoch"] // global_batch
        (dataset if loader is None else loader).load_state_dict(state)
    ckpt = Path(spec["ckpt"]) / f"rank{rank}"
    ckpt.mkdir(parents=True, exist_ok=True)
    batches = _dataset_batches(dataset, batch_size) if loader is None else loader
    step = start_step
    for batch in batches:
        ids = _ids(batch)
        assert len(ids) == batch_size, ids
        dist.all_reduce(torch.tensor([len(ids)]))  # DDP's gradient sync
        time.sleep(spec["step_s"])  # the step's compute
        step += 1
        if loader is not None:
            state = loader.state_dict()
        elif variant == "dataset":
            state = dataset.state_dict(step * global_batch, True)
        else:
            state = dataset.state_dict((step - start_step) * global_batch, False)
        _commit(ckpt / f"step{step:06d}.json", {"step": step, "ids": ids, "state": state})
    time.sleep(spec["tail_s"])  # the end of the epoch's work (evaluation, say)
    _commit(ckpt / "done.json", {"steps": step, "pid": os.getpid()})
    dist.barrier()
    dist.destroy_process_group()


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (the driver, for the launcher; the
    launcher, for a rank), so that nothing outlives its job."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _rank_entry(spec: dict[str, Any], rank: int) -> None:
    """A forked rank: runs, and exits without running the launcher's exit handlers."""
    code = 0
    try:
        _die_with_parent()
        rank_main(spec, rank)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def launch(spec: dict[str, Any]) -> int:
    """Forks the ranks and waits; if one fails, kills the job (as torchrun tears it down).
    A job still running after ``timeout`` seconds kills itself too, and so does one whose
    driver died."""
    _die_with_parent()
    signal.signal(signal.SIGALRM, lambda *_: os.killpg(os.getpgrp(), signal.SIGKILL))
    signal.alarm(spec["timeout"])
    pids = []
    for rank in range(spec["world"]):
        pid = os.fork()
        if pid == 0:
            _rank_entry(spec, rank)
        pids.append(pid)
    failed = 0
    for _ in pids:
        _, status = os.wait()
        if os.waitstatus_to_exitcode(status) != 0:
            failed += 1
            os.killpg(os.getpgrp(), signal.SIGKILL)  # the launcher too: the driver sees -9
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(launch(json.loads(Path(sys.argv[1]).read_text())))
