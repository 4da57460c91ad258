"""Dataset construction over a very large index (issue 13): 650k shards, a ~200 MB
``index.json``, local, no shard files (construction reads only the index).

Each row is one fresh interpreter that imports its library (and torch), records its peak
RSS, then times ``StreamingDataset(local=...)`` plus ``len(ds)``; ``rss_mb`` is the peak
resident size of the whole process, ``rss_growth_mb`` how much construction added to the
peak after imports. Libraries run interleaved, ``--repeat`` times each, and medians are
reported (wall and CPU seconds; on a shared machine CPU time is the steadier figure).

* ``streamx`` and ``streaming`` (mosaicml-streaming 0.13.0, the oracle) read the same MDS
  index, written as mosaicml-streaming writes them;
* ``litdata`` reads an index of its own format with as many chunks (its entries are smaller,
  so its file is about a third the size), when LitData is installed.

``correct``: the dataset reports the expected number of samples.

Usage: ``python benches/bench_index.py [--shards N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import format_table, machine, run_worker, timed_cpu, worker_main, write_results

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "format"))
from big_index import shard_samples, write_big_index

LIBS = ("streamx", "litdata", "streaming")


def _peak_mb() -> float:
    """This process's peak resident size. ``VmHWM``, not ``ru_maxrss``: Linux carries the
    parent's high-water mark over ``fork`` + ``exec`` into ``ru_maxrss``."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _construct(spec: dict[str, Any]) -> dict[str, Any]:
    lib, local = spec["lib"], spec["local"]
    if lib == "litdata":
        import litdata

        before = _peak_mb()
        wall, cpu, ds = timed_cpu(lambda: litdata.StreamingDataset(input_dir=f"local:{local}"))
        size = len(ds)
    else:
        if lib == "streamx":
            from streamx import StreamingDataset
        else:
            from streaming import StreamingDataset
            from streaming.base.util import clean_stale_shared_memory

            clean_stale_shared_memory()
        before = _peak_mb()

        def build() -> Any:
            return StreamingDataset(local=local, batch_size=8)

        wall, cpu, ds = timed_cpu(build)
        size = ds.size
    after = _peak_mb()
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": after, "rss_growth_mb": after - before,
            "samples": size}  # fmt: skip


def _litdata_index(directory: str, num_shards: int) -> None:
    """A LitData index with ``num_shards`` chunks, its config from a real LitData write."""
    from litdata.streaming.writer import BinaryWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = BinaryWriter(tmp, chunk_size=2)
        for i in range(2):
            writer[i] = {"id": i, "text": "x"}
        writer.done()
        writer.merge()
        config = json.loads(Path(tmp, "index.json").read_text())["config"]
    chunks = [
        {
            "chunk_bytes": 200 * shard_samples(i),
            "chunk_size": shard_samples(i),
            "dim": None,
            "filename": f"chunk-0-{i}.bin",
        }
        for i in range(num_shards)
    ]
    os.makedirs(directory, exist_ok=True)
    Path(directory, "index.json").write_text(json.dumps({"chunks": chunks, "config": config}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=650_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="65k shards, one repeat")
    args = parser.parse_args()
    shards, repeat = (65_000, 1) if args.quick else (args.shards, args.repeat)
    libs = [lib for lib in LIBS if lib != "litdata" or _has_litdata()]
    expected = sum(shard_samples(i) for i in range(shards))
    info = machine()
    with tempfile.TemporaryDirectory() as tmp:
        mds = os.path.join(tmp, "mds")
        index_mb = os.path.getsize(write_big_index(mds, shards)) / 2**20
        lit = os.path.join(tmp, "lit")
        if "litdata" in libs:
            _litdata_index(lit, shards)
        runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in libs}
        for _ in range(repeat):
            for lib in libs:
                local = lit if lib == "litdata" else mds
                runs[lib].append(run_worker(Path(__file__), {"lib": lib, "local": local}))
                print(lib, json.dumps(runs[lib][-1]), os.getloadavg(), file=sys.stderr, flush=True)
    rows = []
    base = {k: statistics.median(r[k] for r in runs["streaming"]) for k in ("wall_s", "cpu_s")}
    for lib, results in runs.items():
        row: dict[str, Any] = {"lib": lib, "shards": shards}
        for key in ("wall_s", "cpu_s", "rss_mb", "rss_growth_mb"):
            row[key] = statistics.median(r[key] for r in results)
        row["wall_ratio"] = base["wall_s"] / row["wall_s"]
        row["cpu_ratio"] = base["cpu_s"] / row["cpu_s"]
        row["correct"] = all(r["samples"] == expected for r in results)
        rows.append(row)
    print(f"index.json: {index_mb:.0f} MB, {shards} shards; load average {os.getloadavg()}")
    print(format_table(rows, [
        ("lib", "library", ""), ("shards", "shards", ","), ("wall_s", "wall s", ".2f"),
        ("cpu_s", "CPU s", ".2f"), ("rss_mb", "peak RSS MB", ".0f"),
        ("rss_growth_mb", "RSS growth MB", ".0f"), ("wall_ratio", "wall vs streaming", ".1f"),
        ("cpu_ratio", "CPU vs streaming", ".1f"), ("correct", "correct", ""),
    ]))  # fmt: skip
    write_results("index", {"machine": info, "index_mb": index_mb, "rows": rows, "runs": runs})


def _has_litdata() -> bool:
    try:
        import litdata  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], _construct):
        main()
