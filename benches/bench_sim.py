"""Streaming Simulator (issue 10): streamx.sim against mosaicml-streaming's simulator.

Both simulate the same run over the same ``index.json`` (uniform shards of 1,000 samples,
20 MB each, uncompressed), ``py1e`` shuffle, mosaic's defaults otherwise: 2 nodes x 4
devices x 2 workers, batch 8 per device, 0.02 s per sample, 200 MB/s per node, one epoch.
mosaic's is ``simulation.core.main.simulate`` on a ``SimulationDataset`` (the wheel's own
simulator, which needs ``sortedcollections``); streamx's is ``streamx.sim.simulate``.

What is timed, the same way for both: CPU seconds (``time.process_time``, all threads) of
one call in this process, which a busy machine disturbs less than wall time, dataset set-up
from ``index.json`` included (streamx's ``load_shards`` and mosaic's ``SimulationDataset``).
Outside both timers, once per process before any timed run: every module imported
(mosaic's ``simulation`` package takes seconds, and brings torch), one untimed warm-up run
of each simulator on a small index (10^4 samples: first calls' one-time costs, such as the
Rust planner's thread pool), then ``gc.collect()`` and ``gc.freeze()``, so that a full
garbage collection inside a timer does not walk the ~390,000 objects those imports left
(one costs 0.2-0.3 s, which landed in whichever timer allocated at the time). Before each
timed call, ``gc.collect()``. At each size of ``--sizes``, ``--repeats`` runs of each side
(default 5), alternating which goes first; a row gives the median CPU seconds of each side
(with the range), the speed-up of the medians, and the smallest of the per-run ratios
(mosaic's run ``i`` over streamx's run ``i``), so the claim rests on every run, not on the
best one; the per-run ratios follow each row as an HTML comment. The first timed run at a
size is usually streamx's slowest (its arrays get fresh memory, page faults and all); it
counts like the others. ``correct`` means both downloaded the same total bytes and need the
same cache.

Then streamx alone on the issue's scale: one epoch of 1e8 samples (10,000 shards) on
8 nodes x 8 devices x 8 workers, batch 32, split into the Rust planner's share (the
``plan_epoch`` call, the order training reads) and the simulator's own.

Last, the cost of the iteration metrics (``streamx.runtime.metrics``): one process iterates
a local dataset of small samples (``StreamingDataset(local=..., batch_size=256)``, epoch
set-up included) with counting on and off (``STREAMX_METRICS=0``), alternating, and the
median CPU time of the repeats is compared; the hook itself (one ``add_samples`` per chunk
of 256 samples) is also timed alone, as a share of the iteration time without metrics.

``--validate`` checks a calibrated prediction against a measured run (``sim_validate.py``
says how).

``--validate --servers unthrottled,40m,https,https-10ms,https-40m-503`` checks the
request model and ``--tune`` against cold epochs from each of ``bench_objstore.py``'s nginx
servers instead (``sim_servers.py`` says how).

``--mosaic-timeout S`` runs each size's mosaic side in a child process instead (imports,
warm-up and ``gc.freeze()`` there too, before its clock is read), killed after ``S``
seconds of wall time: a row then gives mosaic's CPU seconds so far as a lower bound
(``>``), how far it got (its own progress log, every 5% of the steps, which it writes
only when the steps are a multiple of 20) and its peak RSS, against the median of
``--repeats`` streamx runs in this process. That is how the 10^8 row is measured: mosaic's
side takes hours there.

Usage: ``python benches/bench_sim.py [--sizes 1e5,1e6,1e7,1e8] [--repeats 5]
[--compare-only] [--big 1e8] [--quick] [--validate] [--mosaic-timeout S]``.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "sim"))

import numpy as np
from numpy.typing import NDArray
from sim_oracle import mosaic_simulate, write_index

from common import status_mib
from streamx.sim import SimConfig, SimResult, SimStream, load_shards, simulate, synth_shards
from streamx.sim import run as sim_run

T = TypeVar("T")

# The warm-up index: 10 shards, 156 steps of the compared configuration.
_WARM_SAMPLES = 10_000


def _warm_imports() -> None:
    """Imports both simulators' modules before any timer starts (mosaic's take seconds)."""
    import simulation.core.main
    import simulation.core.sim_dataset
    import simulation.core.sim_time  # noqa: F401

    import streamx.sim.run  # noqa: F401


def _ours(root: Path, cfg: SimConfig) -> SimResult:
    """streamx's side of ``cfg``: the table from ``index.json``, then the simulation."""
    return simulate(cfg.with_(streams=(SimStream(load_shards(str(root))),)))


def _theirs(root: Path, cfg: SimConfig) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
    """mosaic's side of ``cfg``: its ``SimulationDataset`` from ``index.json``, then its
    simulation."""
    return mosaic_simulate(root, cfg)


def settle(streamx_side: bool = True, mosaic_side: bool = True) -> None:
    """Everything done once before any timed run (see the module note): imports, one
    untimed warm-up run of each side on a small index, then the heap frozen."""
    _warm_imports()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "warm"
        shards = _WARM_SAMPLES // 1000
        write_index(root, [1000] * shards, [20_000_000] * shards)
        cfg = _compare_config(root)
        if streamx_side:
            _ours(root, cfg)
        if mosaic_side:
            _theirs(root, cfg)
    gc.collect()
    gc.freeze()
    # Back to normal at exit: frozen objects are never finalized, and torch's bindings
    # report each one as a leak.
    atexit.register(gc.unfreeze)


def _timed(run: Callable[[], T]) -> tuple[float, T]:
    """(CPU seconds, result) of ``run()``, after a garbage collection outside the timer."""
    gc.collect()
    began = time.process_time()
    out = run()
    return time.process_time() - began, out


def _spread(times: list[float], digits: int) -> str:
    """``median s (min-max)`` of ``times``; the range only for several runs."""
    mid = f"{statistics.median(times):.{digits}f} s"
    if len(times) == 1:
        return mid
    return f"{mid} ({min(times):.{digits}f}-{max(times):.{digits}f})"


def compare(samples: int, repeats: int) -> None:
    """One row: both simulators on ``samples`` samples (shards of 1,000), ``repeats`` runs
    of each, alternating which goes first (see the module note for what is timed)."""
    shards = samples // 1000
    t_ours: list[float] = []
    t_mosaic: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        write_index(root, [1000] * shards, [20_000_000] * shards)
        cfg = _compare_config(root)  # the run's settings, built outside the timers
        for i in range(repeats):
            for side in ("ours", "mosaic") if i % 2 == 0 else ("mosaic", "ours"):
                if side == "ours":
                    took, ours = _timed(lambda: _ours(root, cfg))
                    t_ours.append(took)
                else:
                    took, (times, downloads, cache) = _timed(lambda: _theirs(root, cfg))
                    t_mosaic.append(took)
    correct = int(downloads.sum()) == int(ours.step_bytes.sum()) and cache == ours.min_cache_limit
    ratios = [m / o for m, o in zip(t_mosaic, t_ours)]
    print(
        f"| {shards * 1000:,} samples, {len(times):,} steps, {repeats} runs | "
        f"{_spread(t_mosaic, 2)} | {_spread(t_ours, 4)} | "
        f"{statistics.median(t_mosaic) / statistics.median(t_ours):.1f}x | "
        f"{min(ratios):.1f}x | {correct} |",
        flush=True,
    )
    print(f"<!-- per-run ratios: {', '.join(f'{r:.1f}' for r in ratios)} -->", flush=True)


def _compare_config(root: Path) -> SimConfig:
    return SimConfig(
        (SimStream(load_shards(str(root))),),
        nodes=2,
        devices=4,
        workers=2,
        batch_size=8,
        time_per_sample=0.02,
        bandwidth=200e6,
        shuffle=True,
    )


def mosaic_child(samples: int, root: str) -> None:
    """The mosaic side alone (``--mosaic-child``): CPU seconds after imports, then at the end."""
    settle(streamx_side=False)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", force=True)
    logging.getLogger("simulation").setLevel(logging.INFO)
    cfg = _compare_config(Path(root))
    gc.collect()
    print(f"ready {time.process_time():.3f}", flush=True)
    times, downloads, cache = _theirs(Path(root), cfg)
    peak = status_mib("VmHWM")
    print(f"done {time.process_time():.3f} {int(downloads.sum())} {cache} {len(times)} {peak}")


def compare_limited(samples: int, timeout: float, repeats: int) -> None:
    """One row, mosaic in a child process killed after ``timeout`` s (see the module note)."""
    import resource
    import subprocess

    shards = samples // 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        write_index(root, [1000] * shards, [20_000_000] * shards)
        cfg = _compare_config(root)
        runs = [_timed(lambda: _ours(root, cfg)) for _ in range(repeats)]
        ours = runs[-1][1]
        t_ours = statistics.median(took for took, _ in runs)
        log = Path(tmp) / "mosaic.log"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        with open(log, "w") as err:
            child = subprocess.Popen(
                [sys.executable, __file__, "--mosaic-child", str(samples), "--root", str(root)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
            try:
                out, _ = child.communicate(timeout=timeout)
                finished = True
            except subprocess.TimeoutExpired:
                killed_peak = status_mib("VmHWM", child.pid)
                child.kill()
                out, _ = child.communicate()
                finished = False
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        progress = [line for line in log.read_text().splitlines() if "Batch" in line]
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    # Killed before its imports were done: nothing of the simulation was timed.
    ready = next((float(ln.split()[1]) for ln in out.splitlines() if ln.startswith("ready")), cpu)
    if finished:
        _, end, total, cache, steps, peak = next(
            line.split() for line in out.splitlines() if line.startswith("done")
        )
        peak_gib = float(peak) / 1024
        t_mosaic = float(end) - ready
        correct = int(total) == int(ours.step_bytes.sum()) and int(cache) == ours.min_cache_limit
        print(
            f"| {samples:,} samples, {int(steps):,} steps | {t_mosaic:.2f} s "
            f"(peak RSS {peak_gib:.1f} GiB) | {t_ours:.3f} s | {t_mosaic / t_ours:.1f}x | "
            f"{correct} |",
            flush=True,
        )
        return
    t_mosaic = cpu - ready
    peak_gib = killed_peak / 1024
    print(
        f"| {samples:,} samples, {len(ours.step_times):,} steps | > {t_mosaic:.0f} s CPU, "
        f"killed after {wall:.0f} s wall, last progress: "
        f"{progress[-1].split(' ', 2)[-1].strip() if progress else 'none (still setting up)'}, "
        f"peak RSS {peak_gib:.1f} GiB | {t_ours:.3f} s | > {t_mosaic / t_ours:.0f}x | "
        f"not checked (mosaic did not finish) |",
        flush=True,
    )


def big(samples: int) -> None:
    cfg = SimConfig(
        (SimStream(synth_shards(samples, samples // 10_000, 64 << 20)),),
        nodes=8,
        devices=8,
        workers=8,
        batch_size=32,
        time_per_sample=0.01,
        bandwidth=1e9,
        shuffle=True,
    )
    planned = 0.0
    original = sim_run.epoch_order

    def timed(config: SimConfig, epoch: int):  # type: ignore[no-untyped-def]
        nonlocal planned
        began = time.process_time()
        out = original(config, epoch)
        planned += time.process_time() - began
        return out

    sim_run.epoch_order = timed  # type: ignore[assignment]
    began, wall = time.process_time(), time.perf_counter()
    result = simulate(cfg)
    total, wall = time.process_time() - began, time.perf_counter() - wall
    sim_run.epoch_order = original
    print(
        f"| {samples:,.0f} samples, 8x8x8, {len(result.step_times):,} steps | "
        f"{total:.1f} s | {planned:.1f} s | {total - planned:.1f} s | {wall:.1f} s |"
    )


def metrics_cost(samples: int, repeat: int) -> None:
    import os
    import statistics

    from streamx import MDSWriter, StreamingDataset

    with tempfile.TemporaryDirectory() as tmp:
        with MDSWriter(out=tmp, columns={"id": "int", "text": "str"}) as writer:
            for i in range(samples):
                writer.write({"id": i, "text": f"sample {i} " * 8})
        times: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(repeat):
            # Alternate which goes first, so warming up favours neither.
            for mode in ("on", "off") if i % 2 else ("off", "on"):
                os.environ["STREAMX_METRICS"] = "1" if mode == "on" else "0"
                ds = StreamingDataset(local=tmp, batch_size=256)
                began = time.process_time()
                count = sum(1 for _ in ds)
                times[mode].append(time.process_time() - began)
                assert count == samples
        os.environ.pop("STREAMX_METRICS")
        # The hooks' own cost: one add_samples per chunk of 256 samples, timed alone.
        from streamx.runtime import metrics

        os.environ["STREAMX_METRICS"] = "1"
        metrics.begin_epoch(0)
        calls = 200_000
        began = time.process_time()
        for _ in range(calls):
            metrics.add_samples(256)
        per_call = (time.process_time() - began) / calls
        os.environ.pop("STREAMX_METRICS")
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    hooks = per_call * samples / 256 / off
    print(
        f"| {samples:,} samples, {repeat} repeats | {samples / off:,.0f} samples/s | "
        f"{samples / on:,.0f} samples/s | {100 * (on - off) / off:+.2f}% | "
        f"{per_call * 1e6:.2f} us = {100 * hooks:.2f}% |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes", default="1e5,1e6,1e7", help="Samples of each mosaic comparison (commas)."
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="Timed runs of each side at each size."
    )
    parser.add_argument(
        "--compare-only", action="store_true", help="Only the comparison with mosaic's simulator."
    )
    parser.add_argument("--big", type=float, default=1e8)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("--rate", default="16m")
    parser.add_argument(
        "--servers",
        help="With --validate: the request model and --tune against these bench_objstore "
        "servers (commas), e.g. unthrottled,40m,https,https-10ms,https-40m-503.",
    )
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers (--validate).")
    parser.add_argument(
        "--mosaic-timeout", type=float, help="Run mosaic in a child killed after S s."
    )
    parser.add_argument("--mosaic-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.mosaic_child:
        mosaic_child(args.mosaic_child, args.root)
        return
    logging.getLogger("simulation").setLevel(logging.WARNING)
    if args.validate and args.servers:
        from sim_servers import HEADER, validate_servers  # imports torch and nginx helpers

        print(HEADER)
        validate_servers(args.servers.split(","))
        return
    if args.validate:
        print("| run | measured | predicted | time error | first batch error | bytes error |")
        print("|---|---|---|---|---|---|")
        from sim_validate import validate  # imports torch and nginx helpers

        validate(args.rate, args.workers)
        return
    if args.quick:
        args.sizes, args.big = "1e5", 1e7
    settle(mosaic_side=not args.mosaic_timeout)
    if args.mosaic_timeout:
        print("| run | mosaic simulator | streamx.sim (median) | speed-up | correct |")
        print("|---|---|---|---|---|")
    else:
        print(
            "| run | mosaic simulator, median (range) | streamx.sim, median (range) | "
            "speed-up of the medians | smallest per-run speed-up | correct |"
        )
        print("|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        if args.mosaic_timeout:
            compare_limited(int(float(size)), args.mosaic_timeout, args.repeats)
        else:
            compare(int(float(size)), args.repeats)
    if args.mosaic_timeout or args.compare_only:
        return
    print("\n| run | streamx.sim total | of which planner | of which simulator |")
    print("|---|---|---|---|")
    big(int(args.big))
    print("\n| iteration | metrics off | metrics on | difference | hook per chunk |")
    print("|---|---|---|---|---|")
    metrics_cost(100_000 if args.quick else 1_000_000, 3 if args.quick else 7)


if __name__ == "__main__":
    main()
