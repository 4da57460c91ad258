"""WebDataset tars as batches of tensors: streamx's batched ``StreamingDataLoader`` path
against its per-sample path and the ``webdataset`` library's own loader, on the same tars.

The script writes tars with Python's ``tarfile`` (local files, ``--shard`` samples each),
then each reader reads one epoch cold (an empty cache), in a fresh interpreter, batch 32,
no shuffle, torch's default collation; ``--runs`` rounds, the readers alternating within
each:

- ``streamx-batched``: ``WebDatasetStream`` under ``StreamingDataLoader``, its batched path
  (workers read each batch's members from the cached tar, labels and ``.npy`` arrays of one
  header straight into one array per field);
- ``streamx-per-sample``: the same loader with ``batched=False`` (each worker decodes
  sample dicts and collates them with ``default_collate``): the batches are equal;
- ``webdataset``: ``webdataset.WebDataset(...).decode()`` under torch's ``DataLoader``
  (its reader and decoders, the same ``default_collate``), where it is installed.

Cases (``--cases``):

- ``labels``: per sample a ``.cls`` label, a ``float32`` array of 16 and a ``float32`` 4x4
  array (``.npy``) and a short ``.txt``;
- ``tokens``: a ``.cls`` label and a 1-D ``int64`` array of ``--tokens`` token ids.

Reported: samples/s over the epoch, time to the first batch, ``correct`` (every label
once), the batched path's ratio to the others, and streamx's rates after its first batch
(its start, which both its paths share, is listing the tars, scanning their headers and
fetching the first into the cache).

Usage: ``nice python benches/bench_wds_batched.py [--samples N] [--shard N] [--tokens N]
[--cases ...] [--libs ...] [--workers N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from common import format_table, machine, run_worker, timed_pass, worker_main, write_results

SCRIPT = Path(__file__).resolve()
LIBS = ("streamx-batched", "streamx-per-sample", "webdataset")
CASES = ("labels", "tokens")
BATCH, WORKERS = 32, 2
EPOCH_TIMEOUT_S = 900


def _npy(array: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def fields(case: str, i: int, length: int) -> dict[str, bytes]:
    if case == "labels":
        return {
            "cls": str(i).encode(),
            "emb.npy": _npy(np.full(16, i, np.float32)),
            "grid.npy": _npy(np.full((4, 4), i / 2, np.float32)),
            "txt": f"sample {i}".encode(),
        }
    return {"cls": str(i).encode(), "tokens.npy": _npy(np.arange(length, dtype=np.int64) + i)}


def write(out: Path, case: str, samples: int, shard: int, length: int) -> None:
    out.mkdir(parents=True)
    for first in range(0, samples, shard):
        with tarfile.open(out / f"shard-{first // shard:06d}.tar", "w") as tar:
            for i in range(first, min(first + shard, samples)):
                for name, data in fields(case, i, length).items():
                    info = tarfile.TarInfo(f"{i:09d}.{name}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def _streamx(spec: dict[str, Any]) -> Any:
    import streamx

    stream = streamx.WebDatasetStream(remote=spec["folder"], local=spec["local"])
    ds = streamx.StreamingDataset(streams=[stream], batch_size=BATCH, shuffle=False)
    batched = spec["lib"] == "streamx-batched"
    loader = streamx.StreamingDataLoader(
        ds, batch_size=BATCH, num_workers=spec["workers"], batched=batched
    )
    assert loader._batched == batched
    return loader


def _webdataset(spec: dict[str, Any]) -> Any:
    import webdataset as wds
    from torch.utils.data import DataLoader

    urls = [str(p) for p in sorted(Path(spec["folder"]).glob("shard-*.tar"))]
    ds = wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode()
    return DataLoader(ds, batch_size=BATCH, num_workers=spec["workers"])


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every reader)

    make = _webdataset if spec["lib"] == "webdataset" else _streamx
    return timed_pass(lambda: make(spec), lambda b: b["cls"].numpy(), spec["samples"])


def _read(lib: str, folder: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
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
        print(f"{lib}: failed: {str(err)[-400:]}", flush=True)
        result = {"rows_s": 0.0, "ttfs": None, "correct": False}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def bench(root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for case in args.cases:
        folder = root / case
        write(folder, case, args.samples, args.shard, args.tokens)
        size = sum(p.stat().st_size for p in folder.iterdir())
        for run in range(1, args.runs + 1):
            row: dict[str, Any] = {"case": case, "workers": args.workers, "run": run}
            row["mb"] = size / 1e6
            for lib in args.libs:
                result = _read(lib, folder, root, args)
                key = lib.replace("-", "_")
                for name in ("rows_s", "ttfs", "correct"):
                    row[f"{key}_{name}"] = result[name]
                # After the first batch: streamx's start (listing the tars, scanning their
                # headers, fetching the first) left out, which both its paths share.
                after = result.get("seconds", 0.0) - (result["ttfs"] or 0.0)
                row[f"{key}_after_s"] = (args.samples - BATCH) / after if after > 0 else None
                print(lib, case, run, result, flush=True)
            for measure in ("rows_s", "after_s"):
                batched = row.get(f"streamx_batched_{measure}")
                for other in ("streamx_per_sample", "webdataset"):
                    theirs = row.get(f"{other}_{measure}")
                    ratio = batched / theirs if batched and theirs else None
                    row[f"batched_vs_{other}_{measure}"] = ratio
            rows.append(row)
    return rows


COLUMNS = [
    ("case", "case", ""),
    ("workers", "workers", "d"),
    ("run", "run", "d"),
    ("mb", "MB", ".0f"),
    ("streamx_batched_rows_s", "batched samples/s", ",.0f"),
    ("streamx_per_sample_rows_s", "per-sample samples/s", ",.0f"),
    ("webdataset_rows_s", "webdataset samples/s", ",.0f"),
    ("batched_vs_streamx_per_sample_rows_s", "batched vs per-sample", ".2f"),
    ("batched_vs_webdataset_rows_s", "batched vs webdataset", ".2f"),
    ("streamx_batched_after_s", "batched after 1st batch /s", ",.0f"),
    ("streamx_per_sample_after_s", "per-sample after 1st batch /s", ",.0f"),
    ("batched_vs_streamx_per_sample_after_s", "batched vs per-sample after 1st", ".2f"),
    ("streamx_batched_ttfs", "batched TTFS s", ".2f"),
    ("webdataset_ttfs", "webdataset TTFS s", ".2f"),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, epoch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--shard", type=int, default=4096, help="samples per tar")
    parser.add_argument("--tokens", type=int, default=512, help="tokens per sample")
    parser.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="8,192 samples, one run")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples, args.runs = 8192, 1
    root = Path(tempfile.mkdtemp(prefix="streamx-wds-batched-"))
    try:
        rows = bench(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    payload = {"machine": machine(), "args": vars(args), "rows": rows}
    path = write_results("wds_batched", payload)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
