"""Packing at scale (issue 24): ``PackedDataset`` over 10^8 to 10^10 documents, shuffled.

Setup: synthetic documents (document ``i`` is ``i % 97 + 1`` tokens made from its id: no data
to read, so the figures are the packer's own), ``PackedDataset(docs, seq_len=2048,
mode="best_fit", buffer_size=1024, shuffle=True)``. Each row runs in a fresh interpreter
(imports not timed):

* *first s*: construction plus the first packed sequence (the first window's order and
  packing);
* *state bytes*: the JSON of ``state_dict()`` after three sequences;
* *late resume s*: a late checkpoint of 8 ranks x 8 DataLoader workers, each 150,000 windows
  into the epoch (9.6 x 10^6 windows, 10^10 documents' worth at 10^10), merged with
  ``merge_states``, loaded into a new ``PackedDataset``, then its first sequence;
  *late state bytes* is that merged state's JSON. The checkpoint is written in the layout of
  the code under test (window ids before ``windows_done``, runs and counts after);
* *peak MiB*: the process's ``VmHWM``; *order MiB* that mark minus the RSS before
  construction.

``--pythonpath DIR`` runs the rows against another checkout's ``python/`` (the code before a
change); ``--limit-gib`` caps each row's address space (``RLIMIT_AS``), so that a row that
cannot fit reports ``MemoryError`` rather than swapping the machine.

No peer row: mosaicml-streaming has no packing, and LitData's ``TokensLoader`` and energon
pack only data written to disk in their formats, which 10^10 documents are not here (their
throughput on real data is in ``bench_packing.py``).

Usage: ``python benches/bench_packed_scale.py [--sizes 1e8,1e9,1e10] [--pythonpath DIR]
[--limit-gib G] [--label L]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from common import format_table, run_rows, status_mib, write_results

SCRIPT = Path(__file__).resolve()
CONFIG: dict[str, Any] = {
    "seq_len": 2048,
    "mode": "best_fit",
    "buffer_size": 1024,
    "shuffle": True,
    "seed": 17,
}
RANKS, WORKERS, TURNS = 8, 8, 150_000


class Documents:
    """``n`` documents, each made from its id."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        import numpy as np

        return {"tokens": np.arange(i % 97 + 1, dtype=np.int64) + i % 1000}


def _late_state(packed: Any) -> dict[str, object]:
    """The merged checkpoint of RANKS x WORKERS consumers, TURNS windows each, in the layout
    of the code under test."""
    consumers = RANKS * WORKERS
    windows = min(consumers * TURNS, packed.num_windows() - 1)
    head = {"config": packed.config(), "epoch": 0, "partial": {}}
    if not hasattr(packed, "windows_done"):  # before runs and counts: every window id
        return dict(packed.merge_states([{**head, "done": list(range(windows))}]))
    from streamx.packing.windows_done import Progress

    per = windows // consumers
    states = []
    for rank in range(RANKS):
        mine = dict.fromkeys(range(rank * WORKERS, (rank + 1) * WORKERS), per)
        states.append({**head, **Progress(consumers=consumers, finished=mine).state()})
    return dict(packed.merge_states(states))


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import resource

    if spec["limit_gib"]:
        limit = int(spec["limit_gib"] * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import numpy  # noqa: F401  (imports outside the clock)
    import torch  # noqa: F401

    from streamx import PackedDataset

    n = int(spec["n"])
    before = status_mib("VmRSS")
    out: dict[str, Any] = {"n": n}
    try:
        start = time.perf_counter()
        packed = PackedDataset(Documents(n), **CONFIG)
        stream = iter(packed)
        next(stream)
        out["first_s"] = time.perf_counter() - start
        for _ in range(2):
            next(stream)
        out["state_bytes"] = len(json.dumps(packed.state_dict()))
        late = json.loads(json.dumps(_late_state(packed)))
        out["late_state_bytes"] = len(json.dumps(late))
        start = time.perf_counter()
        resumed = PackedDataset(Documents(n), **CONFIG)
        resumed.load_state_dict(late)
        next(iter(resumed))
        out["late_resume_s"] = time.perf_counter() - start
    except MemoryError:
        out["error"] = "MemoryError"
    out["peak_mib"] = status_mib("VmHWM")
    out["order_mib"] = out["peak_mib"] - before
    return out


def main() -> None:
    from common import worker_main

    if worker_main(sys.argv[1:], worker):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e8,1e9,1e10")
    parser.add_argument("--pythonpath", default=None)
    parser.add_argument("--limit-gib", type=float, default=12.0)
    parser.add_argument("--label", default="streamx")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    specs = [{"n": int(float(size)), "limit_gib": args.limit_gib} for size in args.sizes.split(",")]
    rows = run_rows(
        SCRIPT, specs, label=args.label, timeout=args.timeout, pythonpath=args.pythonpath
    )
    columns = [
        ("label", "code", "s"),
        ("n", "documents", ".0e"),
        ("first_s", "first s", ".3f"),
        ("state_bytes", "state bytes", "d"),
        ("late_resume_s", "late resume s", ".3f"),
        ("late_state_bytes", "late state bytes", "d"),
        ("peak_mib", "peak MiB", ".0f"),
        ("order_mib", "order MiB", ".0f"),
        ("error", "error", "s"),
    ]
    print(format_table(rows, columns))
    write_results(f"packed_scale-{args.label}", {"rows": rows, "config": CONFIG})


if __name__ == "__main__":
    main()
