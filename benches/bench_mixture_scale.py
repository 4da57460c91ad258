"""Mixture resume at scale (issue 24): ``MixedDataset`` over 10^8 to 10^10 positions, resumed
three quarters in.

Setup: two synthetic sources of ``N / 2`` samples each (a sample is its index: nothing is
read), global batches of 1,024, ``num_samples=N``, and a schedule of two held points, the
second at half the run. Two weightings: ``carry`` (0.7/0.3 then 0.2/0.8: a fraction of a
sample carried every step) and ``whole`` (3:1 then 1:3: whole samples per step). Each row in
a fresh interpreter (imports not timed):

* *first s*: construction plus the first position;
* *resume s*: a new ``MixedDataset``, ``load_state_dict`` of the state at ``3N/4`` (written
  by another instance, through JSON), and the first position of ``iter``;
* *state bytes*: that state's JSON; *peak MiB*: ``VmHWM``.

``--pythonpath DIR`` runs the rows against another checkout's ``python/``.

No peer row: mosaicml-streaming has no schedule; LitData's ``CombinedStreamingDataset``
has fixed weights and its elastic resume excludes mixed datasets (its #878); energon
resumes only at the same data-parallel size.

Usage: ``python benches/bench_mixture_scale.py [--sizes 1e8,1e9,1e10] [--pythonpath DIR]
[--label L]``.
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
BATCH = 1024
WEIGHTS = {
    "carry": ({"web": 0.7, "code": 0.3}, {"web": 0.2, "code": 0.8}),
    "whole": ({"web": 3, "code": 1}, {"web": 1, "code": 3}),
}


class Source:
    """``n`` samples, each its index."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy  # noqa: F401  (imports outside the clock)

    from streamx import MixedDataset, MixtureSchedule

    n, first_w, second_w = int(spec["n"]), *WEIGHTS[spec["weights"]]

    def mixed() -> Any:
        schedule = MixtureSchedule({0: first_w, (n // BATCH) // 2: second_w})
        sources = {"web": Source(n // 2), "code": Source(n - n // 2)}
        return MixedDataset(sources, schedule, global_batch_size=BATCH, num_samples=n)

    out: dict[str, Any] = {"n": n, "weights": spec["weights"]}
    start = time.perf_counter()
    next(iter(mixed()))
    out["first_s"] = time.perf_counter() - start
    state = json.loads(json.dumps(mixed().state_at(n * 3 // 4)))
    out["state_bytes"] = len(json.dumps(state))
    start = time.perf_counter()
    resumed = mixed()
    resumed.load_state_dict(state)
    next(iter(resumed))
    out["resume_s"] = time.perf_counter() - start
    out["peak_mib"] = status_mib("VmHWM")
    return out


def main() -> None:
    from common import worker_main

    if worker_main(sys.argv[1:], worker):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e8,1e9,1e10")
    parser.add_argument("--weights", default="carry,whole")
    parser.add_argument("--pythonpath", default=None)
    parser.add_argument("--label", default="streamx")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    specs = [
        {"n": int(float(size)), "weights": weights}
        for weights in args.weights.split(",")
        for size in args.sizes.split(",")
    ]
    rows = run_rows(
        SCRIPT, specs, label=args.label, timeout=args.timeout, pythonpath=args.pythonpath
    )
    columns = [
        ("label", "code", "s"),
        ("weights", "weights", "s"),
        ("n", "positions", ".0e"),
        ("first_s", "first s", ".4f"),
        ("resume_s", "resume s", ".4f"),
        ("state_bytes", "state bytes", "d"),
        ("peak_mib", "peak MiB", ".0f"),
        ("error", "error", "s"),
    ]
    print(format_table(rows, columns))
    write_results(f"mixture_scale-{args.label}", {"rows": rows})


if __name__ == "__main__":
    main()
