"""LitData chunks as batches of tensors: streamx's batched ``StreamingDataLoader`` path
against its per-sample path and LitData's own ``StreamingDataLoader``, on the same chunks.

The script writes a dataset with ``litdata.optimize`` (local files, chunks of
``--chunk`` samples), then each reader reads one epoch cold (an empty cache), in a fresh
interpreter, batch 32, no shuffle, torch's default collation:

- ``streamx-batched``: ``LitDataStream`` under ``StreamingDataLoader``, its batched path
  (workers read each batch leaf by leaf from the mapped chunk, numbers and arrays of one
  shape straight into one array per key);
- ``streamx-per-sample``: the same loader with ``batched=False`` (each worker decodes
  sample dicts and collates them with ``default_collate``): the batches are equal;
- ``litdata``: LitData's ``StreamingDataset`` and ``StreamingDataLoader`` over the
  directory (its own reader, the same ``default_collate``).

Cases (``--cases``):

- ``numeric``: per sample an ``int`` id, a ``float``, a ``bool``, a ``float32`` array of 16
  and an ``int32`` array of 32 (no header), and a ``float32`` 4x4 array (with header);
- ``tokens``: an ``int`` id and a 1-D ``int64`` tensor of ``--tokens`` token ids.

Reported: samples/s over the epoch, time to the first batch, ``correct`` (every id once),
and each streamx reader's ratio to the others.

Usage: ``nice python benches/bench_in_place_batched.py [--samples N] [--chunk N]
[--tokens N] [--cases ...] [--libs ...] [--workers N]``.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from common import format_table, machine, run_worker, timed_pass, worker_main, write_results

SCRIPT = Path(__file__).resolve()
LIBS = ("streamx-batched", "streamx-per-sample", "litdata")
CASES = ("numeric", "tokens")
BATCH, WORKERS = 32, 2
EPOCH_TIMEOUT_S = 900


def numeric(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "score": i / 7,
        "flag": i % 3 == 0,
        "emb": np.full(16, i, np.float32),
        "ids": np.arange(32, dtype=np.int32) + i,
        "grid": np.full((4, 4), i / 2, np.float32),
    }


def tokens(i: int, length: int) -> dict[str, Any]:
    import torch

    return {"id": i, "tokens": torch.arange(length, dtype=torch.int64) + i}


def write(out: str, case: str, samples: int, chunk: int, length: int) -> None:
    import litdata

    fn = numeric if case == "numeric" else functools.partial(tokens, length=length)
    litdata.optimize(
        fn=fn,
        inputs=list(range(samples)),
        output_dir=out,
        chunk_size=chunk,
        num_workers=1,
        mode="overwrite",
        verbose=False,
    )


def _streamx(spec: dict[str, Any]) -> Any:
    import streamx

    stream = streamx.LitDataStream(remote=spec["folder"], local=spec["local"])
    ds = streamx.StreamingDataset(streams=[stream], batch_size=BATCH, shuffle=False)
    batched = spec["lib"] == "streamx-batched"
    loader = streamx.StreamingDataLoader(
        ds, batch_size=BATCH, num_workers=spec["workers"], batched=batched
    )
    assert loader._batched == batched
    return loader


def _litdata(spec: dict[str, Any]) -> Any:
    import litdata

    ds = litdata.StreamingDataset(spec["folder"], cache_dir=spec["local"])
    return litdata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=spec["workers"])


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every reader)

    make = _litdata if spec["lib"] == "litdata" else _streamx
    return timed_pass(lambda: make(spec), lambda b: b["id"].numpy(), spec["samples"])


def bench(root: Path, cases: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        folder = root / case
        write(str(folder), case, args.samples, args.chunk, args.tokens)
        size = sum(p.stat().st_size for p in folder.iterdir())
        row: dict[str, Any] = {"case": case, "workers": args.workers, "mb": size / 1e6}
        for lib in args.libs:
            scratch = Path(tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=root))
            spec = {
                "lib": lib,
                "folder": str(folder),
                "local": str(scratch / "c"),
                "samples": args.samples,
                "workers": args.workers,
            }
            try:
                result = run_worker(SCRIPT, spec, timeout=EPOCH_TIMEOUT_S)
            except Exception as err:  # recorded, not fatal: one reader failing
                print(f"{lib} {case}: failed: {str(err)[-400:]}", flush=True)
                result = {"rows_s": 0.0, "ttfs": None, "correct": False}
            shutil.rmtree(scratch, ignore_errors=True)
            key = lib.replace("-", "_")
            row[f"{key}_rows_s"] = result["rows_s"]
            row[f"{key}_ttfs"] = result["ttfs"]
            row[f"{key}_correct"] = result["correct"]
            print(lib, case, result, flush=True)
        batched = row.get("streamx_batched_rows_s")
        for other in ("streamx_per_sample", "litdata"):
            theirs = row.get(f"{other}_rows_s")
            row[f"batched_vs_{other}"] = batched / theirs if batched and theirs else None
        theirs, ours = row.get("litdata_rows_s"), row.get("streamx_per_sample_rows_s")
        row["per_sample_vs_litdata"] = ours / theirs if ours and theirs else None
        rows.append(row)
    return rows


COLUMNS = [
    ("case", "case", ""),
    ("workers", "workers", "d"),
    ("mb", "MB", ".0f"),
    ("streamx_batched_rows_s", "batched samples/s", ",.0f"),
    ("streamx_per_sample_rows_s", "per-sample samples/s", ",.0f"),
    ("litdata_rows_s", "LitData samples/s", ",.0f"),
    ("batched_vs_streamx_per_sample", "batched vs per-sample", ".2f"),
    ("batched_vs_litdata", "batched vs LitData", ".2f"),
    ("per_sample_vs_litdata", "per-sample vs LitData", ".2f"),
    ("streamx_batched_ttfs", "batched TTFS s", ".2f"),
    ("litdata_ttfs", "LitData TTFS s", ".2f"),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, epoch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=4096, help="samples per chunk")
    parser.add_argument("--tokens", type=int, default=512, help="tokens per sample")
    parser.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--workers", type=int, default=WORKERS)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="streamx-lit-batched-"))
    try:
        rows = bench(root, args.cases, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    payload = {"machine": machine(), "args": vars(args), "rows": rows}
    path = write_results("in_place_batched", payload)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
