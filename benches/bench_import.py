"""Import time: ``import streamx`` vs ``import streaming`` (mosaicml-streaming 0.13.0).

Each measurement is a fresh interpreter running only ``python -c`` with the statement
timed by ``perf_counter`` around it, so nothing is imported beforehand (the benchmark's own
modules are not loaded there). The rows:

* ``import streamx`` / ``import streaming``: the package alone;
* ``from streamx import StreamingDataset`` / ``from streaming import StreamingDataset``:
  what a training script pays (torch included; ``import streaming`` loads torch already);
* ``write 100 samples``: ``import streamx`` plus writing 100 samples with ``MDSWriter``, for
  each library: what a data-preparation job pays.

Every statement is repeated ``--repeat`` times (default 9), in alternation between the
libraries, and the medians of wall and CPU seconds are reported (on a shared machine the
CPU time is the steadier of the two, since waiting for a core does not count). ``correct``
for a streamx row means torch was not imported where it must not be (``import streamx``,
writing); for a streaming row, that the statement ran.

Usage: ``python benches/bench_import.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

from common import format_table, machine, write_results

# Issue target: ``import streamx`` in at most 0.3 s with torch installed.
TARGET_S = 0.3

_WRITE = """
import tempfile
with tempfile.TemporaryDirectory() as d, {lib}.MDSWriter(out=d, columns={{"id": "int"}}) as w:
    for i in range(100):
        w.write({{"id": i}})
"""

# (name, statement per library, whether streamx must leave torch unloaded)
CASES = [
    ("import", {"streamx": "import streamx", "streaming": "import streaming"}, True),
    (
        "import StreamingDataset",
        {
            "streamx": "from streamx import StreamingDataset",
            "streaming": "from streaming import StreamingDataset",
        },
        False,
    ),
    (
        "write 100 samples",
        {lib: f"import {lib}\n" + _WRITE.format(lib=lib) for lib in ("streamx", "streaming")},
        True,
    ),
]

_PROBE = """
import sys, time, json
start, cpu = time.perf_counter(), time.process_time()
exec(compile({stmt!r}, "<bench>", "exec"))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({{"seconds": seconds, "cpu": cpu, "torch": "torch" in sys.modules}}))
"""


def measure(stmt: str) -> dict[str, float | bool]:
    """Runs ``stmt`` timed in a fresh interpreter; returns its seconds and torch flag."""
    with tempfile.TemporaryDirectory() as cwd:  # no local module shadows the libraries
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE.format(stmt=stmt)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=cwd,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{stmt!r} failed:\n{proc.stderr[-4000:]}")
    result: dict[str, float | bool] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench(repeat: int) -> list[dict[str, object]]:
    """Medians per case and library, alternating the libraries run by run."""
    rows: list[dict[str, object]] = []
    for name, stmts, torch_free in CASES:
        runs: dict[str, list[dict[str, float | bool]]] = {lib: [] for lib in stmts}
        for _ in range(repeat):
            for lib, stmt in stmts.items():
                runs[lib].append(measure(stmt))
        medians = {lib: statistics.median(float(r["seconds"]) for r in runs[lib]) for lib in runs}
        cpu = {lib: statistics.median(float(r["cpu"]) for r in runs[lib]) for lib in runs}
        torch_loaded = any(bool(r["torch"]) for r in runs["streamx"])
        rows.append(
            {
                "case": name,
                "streamx_s": medians["streamx"],
                "streaming_s": medians["streaming"],
                "ratio": medians["streaming"] / medians["streamx"],
                "streamx_cpu_s": cpu["streamx"],
                "streaming_cpu_s": cpu["streaming"],
                "cpu_ratio": cpu["streaming"] / cpu["streamx"],
                "streamx_torch": torch_loaded,
                "target_s": TARGET_S if name == "import" else None,
                "correct": not (torch_free and torch_loaded),
            }
        )
        print(format_table(rows[-1:], TABLE), flush=True)
    return rows


TABLE = [
    ("case", "case", ""),
    ("streamx_s", "streamx s (median)", ".3f"),
    ("streaming_s", "streaming s (median)", ".3f"),
    ("ratio", "ratio", ".1f"),
    ("streamx_cpu_s", "streamx CPU s", ".3f"),
    ("streaming_cpu_s", "streaming CPU s", ".3f"),
    ("cpu_ratio", "CPU-time ratio", ".1f"),
    ("streamx_torch", "streamx loads torch", ""),
    ("target_s", "target s", ".1f"),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> int:
    """Runs every case, prints the table and writes ``results/import-*.json``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per statement; median kept")
    parser.add_argument("--quick", action="store_true", help="3 runs per statement")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    rows = bench(repeat)
    print()
    print(format_table(rows, TABLE))
    payload = {"repeat": repeat, "machine": machine(), "rows": rows}
    print(f"\nresults: {write_results('import', payload)}")
    for row in rows:
        if row["target_s"] is not None and float(str(row["streamx_s"])) > TARGET_S:
            print(f"below target: {row['case']}")
        if not row["correct"]:
            print(f"INCORRECT: {row['case']} (torch imported)")
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
