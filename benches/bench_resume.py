"""Distributed runtime (issue 4): mid-epoch resumption latency and DataLoader throughput.

Two measurements, streamx vs mosaicml-streaming 0.13.0 in the same run, each in a fresh
interpreter:

* **resume**: an epoch of 10,000,000 small samples (``{'id': 'int'}``, written once with
  ``streamx.MDSWriter`` and cached), ``StreamingDataset(local=..., batch_size=256,
  shuffle=True)`` with every other setting at its default (``py1e``, ``relaxed``, one
  canonical node), inside a ``StreamingDataLoader``. Timed: from ``load_state_dict`` of a
  state at 90% of epoch 0 to the first batch in hand (``next(iter(loader))``), which
  includes starting the DataLoader workers and computing the rest of the epoch's order.
  Measured with 0 and with 2 workers (``fork``). The first batches of both libraries must
  be the same ids.
* **throughput**: a full shuffled epoch of small text samples (``{'id': 'int', 'text':
  'str'}``, 50-200 byte strings, as in ``bench_io.py``) through ``StreamingDataLoader(...,
  batch_size=256, num_workers=2)``; samples per second from ``iter`` to the last batch.
  Every id must come back once, in the same order in both libraries.

Usage: ``python benches/bench_resume.py [--quick] [--repeat N] [--workdir DIR]``. Datasets
are cached in ``--workdir`` (default ``$TMPDIR/streamx-bench-resume``) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import digest, format_table, import_lib, machine, run_worker, worker_main, write_results

SCRIPT = Path(__file__).resolve()
BATCH = 256
RESUME_SAMPLES = {"full": 10_000_000, "quick": 1_000_000}
TEXT_SAMPLES = {"full": 1_000_000, "quick": 100_000}
RESUME_AT = 0.9
# Targets from issue 4: resume at most 0.5 s and at least 10x faster; throughput 5x.
RESUME_MAX_S = 0.5
RESUME_RATIO = 10.0
THROUGHPUT_RATIO = 5.0


def _write_ints(out: Path, n: int) -> None:
    import streamx

    with streamx.MDSWriter(out=str(out), columns={"id": "int"}) as writer:
        for i in range(n):
            writer.write({"id": i})


def _write_texts(out: Path, n: int, seed: int = 0) -> None:
    import streamx

    rng = random.Random(seed)
    pool = "".join(rng.choices(string.ascii_letters + string.digits + " ", k=1 << 14))
    lengths = np.random.default_rng(seed).integers(50, 201, n).tolist()
    starts = np.random.default_rng(seed + 1).integers(0, (1 << 14) - 200, n).tolist()
    with streamx.MDSWriter(out=str(out), columns={"id": "int", "text": "str"}) as writer:
        for i in range(n):
            writer.write({"id": i, "text": pool[starts[i] : starts[i] + lengths[i]]})


def ensure_dataset(path: Path, kind: str, n: int) -> Path:
    """Writes the dataset unless a complete copy with ``n`` samples is already there."""
    index = path / "index.json"
    if index.exists():
        shards = json.loads(index.read_text())["shards"]
        if sum(s["samples"] for s in shards) == n:
            return path
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    started = time.perf_counter()
    (_write_ints if kind == "ints" else _write_texts)(tmp, n)
    tmp.rename(path)
    print(f"wrote {n:,} {kind} samples to {path} in {time.perf_counter() - started:.1f} s")
    return path


def _loader(lib: Any, local: str, workers: int) -> Any:
    ds = lib.StreamingDataset(local=local, batch_size=BATCH, shuffle=True)
    context = "fork" if workers else None
    return lib.StreamingDataLoader(
        ds, batch_size=BATCH, num_workers=workers, multiprocessing_context=context
    )


def do_resume(spec: dict[str, Any]) -> dict[str, Any]:
    """Time from ``load_state_dict`` to the first batch, resuming at 90% of epoch 0."""
    lib = import_lib(spec["lib"])
    loader = _loader(lib, spec["dir"], spec["workers"])
    state = {
        "epoch": 0,
        "sample_in_epoch": spec["sample_in_epoch"],
        "num_canonical_nodes": 1,
        "shuffle_seed": 9176,
        "initial_physical_nodes": 1,
    }
    started = time.perf_counter()
    loader.load_state_dict(state)
    it = iter(loader)
    first = next(it)
    seconds = time.perf_counter() - started
    ids = first["id"].tolist()
    more = [next(it)["id"].tolist() for _ in range(3)]  # the continuation, checked too
    return {"seconds": seconds, "first": ids, "more": more, "digest": digest(ids)}


def do_throughput(spec: dict[str, Any]) -> dict[str, Any]:
    """One full shuffled epoch through a 2-worker DataLoader: samples per second."""
    lib = import_lib(spec["lib"])
    loader = _loader(lib, spec["dir"], spec["workers"])
    ids: list[int] = []
    started = time.perf_counter()
    for batch in loader:
        ids += batch["id"].tolist()
    seconds = time.perf_counter() - started
    n = spec["n"]
    ok = len(ids) == n and len(set(ids)) == n
    return {"seconds": seconds, "samples": len(ids), "sps": len(ids) / seconds, "ok": ok,
            "digest": digest(ids)}  # fmt: skip


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one measurement in this (fresh) process."""
    return {"resume": do_resume, "throughput": do_throughput}[spec["op"]](spec)


def _best(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    runs = [run_worker(SCRIPT, spec) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "all_seconds": [r["seconds"] for r in runs]}


def bench_resume(local: Path, n: int, repeat: int) -> list[dict[str, Any]]:
    """Resume latency rows, for 0 and 2 DataLoader workers."""
    rows = []
    for workers in (0, 2):
        results = {}
        for lib in ("streaming", "streamx"):
            spec = {"op": "resume", "lib": lib, "dir": str(local), "workers": workers,
                    "sample_in_epoch": int(n * RESUME_AT)}  # fmt: skip
            results[lib] = _best(spec, repeat)
        ours, theirs = results["streamx"], results["streaming"]
        ratio = theirs["seconds"] / ours["seconds"]
        correct = ours["first"] == theirs["first"] and ours["more"] == theirs["more"]
        rows.append({
            "measure": "resume at 90%", "samples": n, "workers": workers,
            "streamx": ours["seconds"], "streaming": theirs["seconds"], "ratio": ratio,
            "streamx_all": ours["all_seconds"], "streaming_all": theirs["all_seconds"],
            "unit": "s", "target": f"<= {RESUME_MAX_S} s, >= {RESUME_RATIO:.0f}x",
            "meets_target": ours["seconds"] <= RESUME_MAX_S and ratio >= RESUME_RATIO,
            "correct": correct,
        })  # fmt: skip
    return rows


def bench_throughput(local: Path, n: int, repeat: int) -> list[dict[str, Any]]:
    """DataLoader throughput row, 2 workers."""
    results = {}
    for lib in ("streaming", "streamx"):
        spec = {"op": "throughput", "lib": lib, "dir": str(local), "workers": 2, "n": n}
        results[lib] = _best(spec, repeat)
    ours, theirs = results["streamx"], results["streaming"]
    ratio = ours["sps"] / theirs["sps"]
    return [{
        "measure": "DataLoader samples/s", "samples": n, "workers": 2,
        "streamx": ours["sps"], "streaming": theirs["sps"], "ratio": ratio,
        "streamx_all": ours["all_seconds"], "streaming_all": theirs["all_seconds"],
        "unit": "samples/s", "target": f">= {THROUGHPUT_RATIO:.0f}x",
        "meets_target": ratio >= THROUGHPUT_RATIO,
        "correct": ours["ok"] and theirs["ok"] and ours["digest"] == theirs["digest"],
    }]  # fmt: skip


TABLE = [
    ("measure", "measure", ""),
    ("samples", "samples", ","),
    ("workers", "workers", ""),
    ("streamx", "streamx", ",.3f"),
    ("streaming", "streaming", ",.3f"),
    ("unit", "unit", ""),
    ("ratio", "ratio", ".1f"),
    ("target", "target", ""),
    ("meets_target", "met", ""),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> int:
    """Runs both measurements, prints the table and writes ``results/resume-*.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller datasets, for a smoke run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--workdir", help="dataset cache (default $TMPDIR/streamx-bench-resume)")
    parser.add_argument("--only", choices=["resume", "throughput"], help="one measurement only")
    args = parser.parse_args(argv)
    size = "quick" if args.quick else "full"
    root = Path(args.workdir or Path(tempfile.gettempdir()) / "streamx-bench-resume")
    root.mkdir(parents=True, exist_ok=True)
    n_ints, n_texts = RESUME_SAMPLES[size], TEXT_SAMPLES[size]
    rows = []
    if args.only in (None, "resume"):
        ints = ensure_dataset(root / f"ints-{n_ints}", "ints", n_ints)
        rows += bench_resume(ints, n_ints, args.repeat)
        print(format_table(rows, TABLE), flush=True)
    if args.only in (None, "throughput"):
        texts = ensure_dataset(root / f"texts-{n_texts}", "texts", n_texts)
        rows += bench_throughput(texts, n_texts, args.repeat)
    print()
    print(format_table(rows, TABLE))
    payload = {"quick": args.quick, "repeat": args.repeat, "machine": machine(), "rows": rows}
    print(f"\nresults: {write_results('resume', payload)}")
    for row in rows:
        if row["meets_target"] is False:
            print(f"below target: {row['measure']} (workers={row['workers']})")
        if not row["correct"]:
            print(f"INCORRECT: {row['measure']} (workers={row['workers']})")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], dispatch):
        sys.exit(main(sys.argv[1:]))
