"""DataLoader throughput and memory: streamx vs LitData 0.2.76, WebDataset 1.0.2 and
mosaicml-streaming (issue 12).

Each library reads its own local copy of the same samples (MDS shards written once by
streamx and read by streamx and mosaicml-streaming; LitData's chunks written by
``litdata.optimize``; WebDataset's tar shards by its ``ShardWriter``, see ``wds_peer.py``),
64 MiB shards/chunks, no compression, warm page cache, in a fresh interpreter per
measurement:

- **loader**: one epoch through the library's own ``StreamingDataLoader`` (2 workers,
  batch 32, no shuffle, torch's default collation, as a drop-in user has it). streamx runs
  twice: its default (batched) path and ``batched=False`` (torch's per-sample path).
  WebDataset has no loader of its own here: torch's ``DataLoader`` over ``WebDataset``.
  Peak RSS is the largest sum over the main process and its workers, sampled every 20 ms,
  split into anonymous, file-backed and shared-memory pages (``/proc/PID/status``).
- **in-order**: one pass ``for s in ds`` in one process (img only); streamx also with
  ``zero_copy=True`` (``bytes`` columns as read-only ``memoryview``s over the memory map).

Workloads: ``img`` (about 100 KB of bytes plus an int label), ``tokens`` (``uint32[2048]``,
the first token the sample's id) and ``text`` (50-400 characters plus an int id).
``correct``: every sample exactly once, and streamx's batches in mosaicml-streaming's order
(WebDataset splits shards between workers, so only its once-each is checked).

Usage: ``nice python benches/bench_dataloader.py [--img N] [--tokens N] [--text N]
[--repeat R] [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import wds_peer
from common import format_table, machine, run_worker, worker_main, write_results
from objstore_samples import blob_pool, make_sample

SCRIPT = Path(__file__).resolve()
SHARD = 64 << 20
BATCH = 32
WORKERS = 2
RUNS = ("streamx", "streamx-workers", "streamx-per-sample", "litdata", "webdataset", "streaming")
# Where each library's copy lives under the data root.
COPY = {"litdata": "lit", "webdataset": "wds"}


def _text(i: int) -> str:
    return f"{i} " + "lorem ipsum dolor sit amet " * (2 + i % 14)


COLUMNS = {
    "img": {"label": "int", "data": "bytes"},
    "tokens": {"tokens": "ndarray:uint32:2048"},
    "text": {"id": "int", "text": "str"},
}


def _sample(workload: str, i: int) -> dict[str, Any]:
    if workload == "text":
        return {"id": i, "text": _text(i)}
    return make_sample(workload, i)


def write(spec: dict[str, Any]) -> dict[str, Any]:
    workload, count, out = spec["workload"], spec["count"], spec["out"]
    if spec["lib"] == "litdata":
        import litdata

        litdata.optimize(
            fn=functools.partial(_sample, workload),
            inputs=list(range(count)),
            output_dir=out,
            chunk_bytes=SHARD,
            num_workers=1,
            mode="overwrite",
        )
        return {}
    if spec["lib"] == "webdataset":
        wds_peer.write(out, workload, (_sample(workload, i) for i in range(count)), SHARD)
        return {}
    import streamx

    with streamx.MDSWriter(out=out, columns=COLUMNS[workload], size_limit=SHARD) as writer:
        for i in range(count):
            writer.write(_sample(workload, i))
    return {}


class RssSampler:
    """Peak RSS of this process plus its children, by kind, sampled in a thread."""

    KINDS = ("RssAnon", "RssFile", "RssShmem")

    def __init__(self) -> None:
        self.peak = {"total": 0, **dict.fromkeys(self.KINDS, 0)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self) -> list[int]:
        pids = [os.getpid()]
        for task in os.listdir("/proc/self/task"):
            try:
                pids += [
                    int(p) for p in Path(f"/proc/self/task/{task}/children").read_text().split()
                ]
            except OSError:
                pass
        return pids

    def _sample(self) -> None:
        sums = dict.fromkeys(self.KINDS, 0)
        for pid in self._pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key in sums:
                        sums[key] += int(value.split()[0]) * 1024
            except OSError:
                pass
        total = sum(sums.values())
        if total > self.peak["total"]:
            self.peak = {"total": total, **sums}

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._sample()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _no_init(worker_id: int) -> None:
    """A worker_init_fn that does nothing."""


def _loader(spec: dict[str, Any]) -> Any:
    run, local = spec["run"], spec["local"]
    if run == "litdata":
        import litdata

        ds = litdata.StreamingDataset(local)
        return litdata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=WORKERS)
    if run == "webdataset":
        urls = wds_peer.shard_urls(local, Path(local))
        return wds_peer.loader(urls, spec["workload"], BATCH, WORKERS)
    module: Any
    kwargs = {}
    if run.startswith("streamx"):
        import streamx as module

        # A worker_init_fn makes streamx start workers (its batched-worker path).
        kwargs = {"batched": run != "streamx-per-sample"}
        if run == "streamx-workers":
            kwargs["worker_init_fn"] = _no_init
    else:
        import streaming as module
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
    ds = module.StreamingDataset(local=local, batch_size=BATCH, shuffle=False)
    return module.StreamingDataLoader(ds, batch_size=BATCH, num_workers=WORKERS, **kwargs)


def _batch_ids(workload: str, batch: dict[str, Any]) -> list[int]:
    if workload == "img":
        return [int(i) for i in batch["label"]]
    if workload == "tokens":
        return [int(i) for i in batch["tokens"][:, 0]]
    return [int(i) for i in batch["id"]]


def loader_epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every library)

    count, workload = spec["count"], spec["workload"]
    ids: list[int] = []
    with RssSampler() as rss:
        start = time.perf_counter()
        for batch in _loader(spec):
            ids += _batch_ids(workload, batch)
        seconds = time.perf_counter() - start
    correct = sorted(ids) == list(range(count))
    return {"sps": count / seconds, "correct": correct, "ids": ids, "rss": rss.peak}


def in_order(spec: dict[str, Any]) -> dict[str, Any]:
    run, local, count = spec["run"], spec["local"], spec["count"]
    pool = blob_pool()
    if run == "litdata":
        import litdata

        ds: Any = litdata.StreamingDataset(local)
    elif run == "webdataset":
        ds = wds_peer.dataset(wds_peer.shard_urls(local, Path(local)), "img")
    else:
        import streamx

        ds = streamx.StreamingDataset(
            local=local, shuffle=False, batch_size=BATCH, zero_copy=run == "streamx-zero-copy"
        )
    labels = []
    start = time.perf_counter()
    for sample in ds:
        labels.append(sample["label"])
    seconds = time.perf_counter() - start
    correct = [int(i) for i in labels] == list(range(count))
    for i, sample in enumerate(ds):  # contents, untimed
        if i % 97 == 0:
            correct &= bytes(sample["data"]) == pool[i % len(pool)]
    return {"sps": count / seconds, "correct": correct}


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    ops = {"write": write, "loader": loader_epoch, "in-order": in_order}
    return ops[spec["op"]](spec)


def _best(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    results = [run_worker(SCRIPT, spec, timeout=1800) for _ in range(repeat)]
    best = max(results, key=lambda r: r["sps"])
    best["rss"] = min(
        (r["rss"] for r in results if "rss" in r), key=lambda r: r["total"], default=None
    )
    best["all_sps"] = [r["sps"] for r in results]
    return best


def bench(
    root: Path, counts: dict[str, int], repeat: int, runs: tuple[str, ...] = RUNS
) -> list[dict[str, Any]]:
    rows = []
    for workload, count in counts.items():
        row: dict[str, Any] = {"op": "loader", "workload": workload}
        ids = {}
        for run in runs:
            local = str(root / COPY.get(run, "mds") / workload)
            spec = {
                "op": "loader",
                "run": run,
                "workload": workload,
                "count": count,
                "local": local,
            }
            result = _best(spec, repeat)
            print(run, workload, result["all_sps"], result["rss"], flush=True)
            ids[run] = result.pop("ids")
            row[f"{run}_sps"] = result["sps"]
            row[f"{run}_all"] = result["all_sps"]
            row[f"{run}_rss"] = result["rss"]
            row[f"{run}_correct"] = result["correct"]
        ours = [ids[r] for r in runs if r.startswith("streamx")] + [ids.get("streaming")]
        row["same_order"] = all(o == ours[0] for o in ours if o is not None)
        row["correct"] = row["same_order"] and all(row[f"{r}_correct"] for r in runs)
        rows.append(row)
    in_order_runs = ("streamx", "streamx-zero-copy", "litdata", "webdataset")
    if "img" in counts and "litdata" in runs:
        row = {"op": "in-order", "workload": "img"}
        for run in in_order_runs:
            local = str(root / COPY.get(run, "mds") / "img")
            spec = {"op": "in-order", "run": run, "count": counts["img"], "local": local}
            result = _best(spec, repeat)
            print(run, "in-order", result["all_sps"], flush=True)
            row[f"{run}_sps"] = result["sps"]
            row[f"{run}_all"] = result["all_sps"]
            row[f"{run}_correct"] = result["correct"]
        row["correct"] = all(row[f"{r}_correct"] for r in in_order_runs)
        rows.append(row)
    for row in rows:
        sx = row.get("streamx-zero-copy_sps") or row.get("streamx_sps")
        if sx and row.get("litdata_sps"):
            row["vs_litdata"] = sx / row["litdata_sps"]
        if sx and row.get("webdataset_sps"):
            row["vs_webdataset"] = sx / row["webdataset_sps"]
        if "streamx-workers_sps" in row and row.get("litdata_sps"):
            row["workers_vs_litdata"] = row["streamx-workers_sps"] / row["litdata_sps"]
        if "streaming_sps" in row:
            row["vs_streaming"] = row["streamx_sps"] / row["streaming_sps"]
        if "streamx-per-sample_sps" in row:
            row["vs_per_sample"] = row["streamx_sps"] / row["streamx-per-sample_sps"]
    return rows


TABLE = [
    ("op", "op", ""),
    ("workload", "workload", ""),
    ("streamx_sps", "streamx samples/s", ",.0f"),
    ("streamx-zero-copy_sps", "streamx zero-copy", ",.0f"),
    ("streamx-workers_sps", "streamx batched workers", ",.0f"),
    ("streamx-per-sample_sps", "streamx per-sample", ",.0f"),
    ("litdata_sps", "LitData samples/s", ",.0f"),
    ("webdataset_sps", "WebDataset samples/s", ",.0f"),
    ("streaming_sps", "mosaic samples/s", ",.0f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("vs_webdataset", "vs WebDataset", ".2f"),
    ("workers_vs_litdata", "workers vs LitData", ".2f"),
    ("vs_streaming", "vs mosaic", ".2f"),
    ("vs_per_sample", "vs per-sample", ".2f"),
    ("correct", "correct", ""),
]


def rss_table(rows: list[dict[str, Any]]) -> str:
    out = []
    for row in rows:
        for run in RUNS:
            peak = row.get(f"{run}_rss")
            if peak:
                mib = {k: v / 2**20 for k, v in peak.items()}
                out.append({"workload": row["workload"], "run": run, **mib})
    cols = [("workload", "workload", ""), ("run", "library", "")]
    cols += [(k, f"{k} MiB", ",.0f") for k in ("total", "RssAnon", "RssFile", "RssShmem")]
    return format_table(out, cols)


def main(argv: list[str]) -> int:
    if worker_main(argv, dispatch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--img", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--text", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=list(COLUMNS))
    parser.add_argument("--quick", action="store_true", help="a tenth of each workload")
    parser.add_argument("--data", help="keep the written datasets here and reuse them")
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    args = parser.parse_args(argv)
    counts = {"img": args.img, "tokens": args.tokens, "text": args.text}
    if args.quick:
        counts = {k: v // 10 for k, v in counts.items()}
    if args.only:
        counts = {args.only: counts[args.only]}
    root = Path(args.data or tempfile.mkdtemp(prefix="streamx-dataloader-"))
    try:
        for workload, count in counts.items():
            for lib, name in (("streamx", "mds"), *COPY.items()):
                out = root / name / workload
                done = root / name / f"{workload}.{count}.done"
                if done.exists():
                    continue
                shutil.rmtree(out, ignore_errors=True)
                spec = {"op": "write", "lib": lib, "workload": workload, "count": count}
                run_worker(SCRIPT, {**spec, "out": str(out)}, timeout=3600)
                done.touch()
        load = os.getloadavg()
        rows = bench(root, counts, args.repeat, tuple(args.runs))
    finally:
        if not args.data:
            shutil.rmtree(root, ignore_errors=True)
    print(format_table(rows, TABLE))
    print(rss_table(rows))
    print(f"load average at start {load}, at end {os.getloadavg()}")
    info = machine() | {"loadavg_after_writing": load, "loadavg_at_end": os.getloadavg()}
    path = write_results(
        "dataloader", {"machine": info, "counts": counts, "repeat": args.repeat, "rows": rows}
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
