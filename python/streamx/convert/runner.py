"""Running the parts: a pool of worker processes, a progress bar, and failing fast.

Parts are handed out in order and finish in any order; the output does not depend on which
worker wrote which part. On the first failure the pending parts are cancelled, the running
ones finish or die with the pool, and the error is raised with the part it came from; the
parts already done stay done for a rerun. Workers die with the process that started them,
even when it is killed with SIGKILL (Linux: ``PR_SET_PDEATHSIG``), so none is left running.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Literal

from tqdm import tqdm

from streamx.convert.worker import PartJob, write_part

__all__ = ["StartMethod", "default_workers", "run_jobs"]

StartMethod = Literal["fork", "spawn", "forkserver"]


def default_workers() -> int:
    """Every core this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_jobs(
    jobs: Sequence[PartJob],
    *,
    num_workers: int,
    start_method: StartMethod | None,
    progress: bool,
    total_parts: int,
) -> int:
    """Runs ``jobs``; returns the number of samples they wrote."""
    global _FORKED_JOBS
    bar = tqdm(
        total=total_parts,
        initial=total_parts - len(jobs),
        unit="part",
        desc="Converting",
        # A bar is for a person watching: none in a log file or a pipe.
        disable=not progress or not sys.stderr.isatty(),
        file=sys.stderr,
    )
    samples = 0
    try:
        if num_workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                samples += write_part(job)
                bar.update(1)
                bar.set_postfix(samples=samples)
            return samples
        method = start_method or ("fork" if sys.platform == "linux" else "spawn")
        context = multiprocessing.get_context(method)
        _FORKED_JOBS = jobs if method == "fork" else ()
        # The forkserver, not this process, is the parent of its workers.
        parent = os.getpid() if method != "forkserver" else None
        with ProcessPoolExecutor(
            min(num_workers, len(jobs)),
            mp_context=context,
            initializer=die_with_parent,
            initargs=(parent,),
        ) as pool:
            pending: set[Future[int]] = {
                pool.submit(_write_forked, i) if _FORKED_JOBS else pool.submit(write_part, job)
                for i, job in enumerate(jobs)
            }
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        samples += future.result()
                        bar.update(1)
                        bar.set_postfix(samples=samples)
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
        return samples
    finally:
        _FORKED_JOBS = ()
        bar.close()


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(parent: int | None) -> None:
    """Pool initializer: the kernel sends this worker SIGKILL when its parent dies (a
    ``kill -9`` of ``streamx convert`` included), instead of leaving it running orphaned."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return  # not fatal: the worker still ends when its pool shuts down normally
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent died before the signal was armed


# Forked workers inherit the jobs (a large in-memory dataset, a long input list) instead of
# receiving each one pickled; spawned workers get them pickled.
_FORKED_JOBS: Sequence[PartJob] = ()


def _write_forked(index: int) -> int:
    return write_part(_FORKED_JOBS[index])
