"""Launches one job's rank processes and runs a scripted training loop in each.

Usage: ``python dist_launch.py SPEC.json``. The launcher imports torch and streamx once, then
forks one process per rank (as torchrun starts one per device) with ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set.
Each rank joins a gloo process group on 127.0.0.1, which only this harness uses: for the
per-step ``all_reduce`` that stands in for DDP's gradient sync (a rank with an extra batch
would block there) and for barriers. streamx itself never sees ``torch.distributed``.

Each rank builds a ``StreamingDataset`` on its node's cache directory and a
``StreamingDataLoader`` with real DataLoader workers, runs the passes the spec lists, and
writes what it saw to ``<out>/rank<r>.json`` (batches of ids, state dicts, timings). The
launcher writes ``<out>/launcher.json`` with every rank's exit code. If any rank dies, the
launcher kills the others with SIGKILL, process group and all (as torchrun tears a job
down), so nothing outlives the job. Every wait is bounded by the spec's ``timeout``.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import gc
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter

import streamx
from streamx.runtime.run_dirs import runs_base
from streamx.torch.dataloader import StreamingDataLoader

_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _set_env(spec: dict[str, Any], rank: int) -> None:
    for name in _WORLD_VARS:
        os.environ.pop(name, None)
    os.environ.update({k: str(v) for k, v in spec.get("env", {}).items()})
    if spec.get("single"):
        return
    rpn = spec["ranks_per_node"]
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(spec["nodes"] * rpn),
        LOCAL_RANK=str(rank % rpn),
        LOCAL_WORLD_SIZE=str(rpn),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(spec["master_port"]),
    )


def _rank_setting(spec: dict[str, Any], rank: int, key: str, default: Any = None) -> Any:
    """A setting with an optional per-rank override under ``per_rank[str(rank)]``."""
    override = spec.get("per_rank", {}).get(str(rank), {})
    return override.get(key, spec.get(key, default))


class _Recorder:
    """What one rank saw, written to ``rank<r>.json`` after every change of note."""

    def __init__(self, out: Path, rank: int) -> None:
        self.path = out / f"rank{rank}.json"
        self.data: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "passes": []}

    def dump(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)


def _wait_for_files(paths: list[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rendezvous files never appeared: {paths}")
        time.sleep(0.02)


def _batch_ids(batch: Any) -> list[int]:
    if isinstance(batch, tuple):  # _checked_collate's (ids, samples)
        return list(batch[0])
    return [int(i) for i in batch["id"].tolist()]


def _checked_collate(batch: list[dict[str, Any]]) -> tuple[list[int], list[dict[str, Any]]]:
    """Checks every sample against what was written (in the worker) and leaves the batch as
    ``(ids, samples)``: the ids first, so that the loader counts the batch's samples right."""
    return [_CHECK(sample) for sample in batch], batch


def _check_samples(spec: dict[str, Any], loader_kwargs: dict[str, Any]) -> None:
    """With ``check_samples`` (the directory of ``remote_data.py``), every sample is checked."""
    global _CHECK
    if not spec.get("check_samples"):
        return
    sys.path.insert(0, spec["check_samples"])
    import remote_data

    _CHECK = remote_data.check
    loader_kwargs["collate_fn"] = _checked_collate


_CHECK: Any = None


def _die_with_parent() -> None:
    """SIGKILL this process when the launcher dies, so a killed test leaves no rank behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def rank_main(spec: dict[str, Any], rank: int) -> None:
    """The body of one rank process."""
    os.setpgid(0, 0)  # the launcher kills a rank and its DataLoader workers together
    _die_with_parent()
    _set_env(spec, rank)
    out = Path(spec["out"])
    rec = _Recorder(out, rank)
    single = bool(spec.get("single"))
    if not single:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{spec['gloo_port']}",
            rank=rank,
            world_size=spec["nodes"] * spec["ranks_per_node"],
            timeout=datetime.timedelta(seconds=spec.get("collective_timeout", 60)),
        )
    node = 0 if single else rank // spec["ranks_per_node"]
    started = time.perf_counter()
    ds = streamx.StreamingDataset(local=spec["locals"][node], **spec["dataset"])
    if spec.get("load_state"):
        ds.load_state_dict(json.loads(Path(spec["load_state"]).read_text()))
    loader_kwargs = dict(spec.get("loader", {}))
    _check_samples(spec, loader_kwargs)
    workers = _rank_setting(spec, rank, "num_workers", loader_kwargs.pop("num_workers", 0))
    if not workers:
        loader_kwargs.pop("multiprocessing_context", None)
        loader_kwargs.pop("persistent_workers", None)
    loader = StreamingDataLoader(
        ds, batch_size=spec["dataset"]["batch_size"], num_workers=workers, **loader_kwargs
    )
    rec.data.update(len=len(ds), num_workers=workers, construct_s=time.perf_counter() - started)
    rec.dump()
    if spec.get("rendezvous"):
        ready = Path(spec["rendezvous"]["dir"])
        (ready / f"{spec['rendezvous']['name']}.r{rank}").touch()
        _wait_for_files([ready / n for n in spec["rendezvous"]["wait_for"]], spec["timeout"])
    idle = rank in spec.get("idle_ranks", [])
    kill = spec.get("kill") or {}
    sync = bool(spec.get("sync")) and not single
    for pass_no, plan in enumerate([] if idle else spec["passes"]):
        record: dict[str, Any] = {"batches": []}
        rec.data["passes"].append(record)
        for batch in loader:
            if pass_no == 0 and not record["batches"]:
                rec.data["first_batch_s"] = time.perf_counter() - started
            ids = _batch_ids(batch)
            record["batches"].append(ids)
            if sync:  # DDP's gradient all_reduce: a rank with an extra batch blocks here
                dist.all_reduce(torch.tensor([len(ids)]))
            step = len(record["batches"])
            time.sleep(plan.get("step_s", 0))  # a training step's compute
            if plan.get("state_every"):  # a checkpoint at every step, as a chaos test needs
                record.setdefault("states", []).append(loader.state_dict())
                rec.dump()
            if plan.get("state_after") == step:
                record["state"] = loader.state_dict()
                record["state_step"] = step
                rec.dump()
            if (
                kill.get("rank") == rank
                and kill.get("pass", 0) == pass_no
                and kill["after"] == step
            ):
                rec.dump()
                if kill["target"] == "worker":
                    workers = loader._iterator
                    assert isinstance(workers, _MultiProcessingDataLoaderIter)
                    pid = workers._workers[0].pid
                    assert pid is not None  # a started worker
                    os.kill(pid, signal.SIGKILL)
                    kill = {}  # keep iterating: the DataLoader notices the dead worker
                else:
                    os.kill(os.getpid(), signal.SIGKILL)
            if plan.get("limit") == step:
                break
        rec.data["next_epoch"] = ds.next_epoch
        rec.dump()
    if not single:
        counts: list[list[int] | None] = [None] * dist.get_world_size()
        dist.all_gather_object(counts, [len(p["batches"]) for p in rec.data["passes"]])
        rec.data["all_batch_counts"] = counts
        dist.barrier()
    rec.data["final_state"] = loader.state_dict()
    rec.data["fds_before_close"] = len(os.listdir("/proc/self/fd"))
    del loader, ds
    gc.collect()
    rec.data["runs_left"] = _runs_left(spec["locals"][node])
    rec.dump()
    if not single:
        dist.barrier()
        dist.destroy_process_group()


def _runs_left(local: str) -> list[str]:
    return sorted(os.listdir(runs_base([local])))


def _rank_entry(spec: dict[str, Any], rank: int) -> None:
    try:
        rank_main(spec, rank)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def _kill_group(pid: int | None) -> None:
    if pid is None:  # never started
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def main(spec_path: str) -> int:
    """Starts the ranks, waits for all of them (bounded), and records their exit codes."""
    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    ranks = 1 if spec.get("single") else spec["nodes"] * spec["ranks_per_node"]
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_rank_entry, args=(spec, r)) for r in range(ranks)]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + spec["timeout"]
    timed_out = False
    failed = False
    while any(p.is_alive() for p in procs):
        if any(p.exitcode not in (None, 0) for p in procs) and not failed:
            failed = True  # a rank died: tear the job down as torchrun does
            for p in procs:
                if p.is_alive():
                    _kill_group(p.pid)
        if time.monotonic() > deadline:
            timed_out = True
            for p in procs:
                _kill_group(p.pid)
            break
        time.sleep(0.02)
    for p in procs:
        p.join(5)
        _kill_group(p.pid)  # stray DataLoader workers of a rank that exited
    codes = {str(r): p.exitcode for r, p in enumerate(procs)}
    (out / "launcher.json").write_text(json.dumps({"exitcodes": codes, "timed_out": timed_out}))
    return 0 if all(c == 0 for c in codes.values()) and not timed_out else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
