"""Parquet read in place over HTTPS capped at 40 MB/s per connection: streamx against
LitData, HF ``datasets`` streaming and pyarrow's dataset scanner, on the same files, the
same run (issue 23's Measure section).

The inputs are ``bench_in_place``'s repositories: ``text`` (``--rows`` rows, 10 columns, 4
files) and ``images`` (``--images`` rows of 90-110 KB random bytes, 4 files, row groups of
``--image-group`` rows). nginx serves them over HTTPS at ``--rate`` per connection in front
of the local Hub server (``hub_front.py``): the Hub's API answers listings, and every file
byte comes from nginx, whichever route a reader takes.

Each reader reads cold (empty caches, fresh interpreter), 2 DataLoader workers where it has
workers, batch 32, no shuffle, and hands every row to the loop with all its columns:

- ``streamx``: ``ParquetStream`` over the files' HTTPS URLs (named by a brace pattern),
  ``StreamingDataLoader``, rows as dicts (identity collate);
- ``streamx-batched``: the same, torch's default collation on the batched path (columns
  straight into tensors and lists);
- ``streamx-hf``: ``ParquetStream(remote="hf://datasets/bench/NAME/data/*.parquet")``,
  rows as dicts: the same route as the peers;
- ``hf``: ``datasets.load_dataset(..., streaming=True)`` through the Hub, torch's
  ``DataLoader``;
- ``litdata``: ``index_parquet_dataset`` on the ``hf://`` URL (its index from the footers)
  and its ``StreamingDataset`` with ``ParquetLoader``, workers started by ``spawn``;
- ``pyarrow``: ``pyarrow.dataset`` over ``HfFileSystem``; ``pyarrow-s3``: over pyarrow's
  own ``S3FileSystem`` (path-style GETs to nginx, the files named); both in one process
  (pyarrow's own threads), each batch turned into row dicts (``to_pylist``).

Reported per reader: rows/s over the epoch, seconds to the first batch (from building the
dataset, indexing included; streamx's byte code written first, as an install has it), the
CPU seconds of the reader's process and of its loop's thread over the epoch (a DataLoader
worker's own are not counted), MB nginx sent, ``correct`` (every id exactly once); ratios
of streamx to the best peer.
``--rounds N`` repeats all readers N times, alternating their order. ``--before DIR`` adds
``streamx-before`` and ``streamx-batched-before``: the same readers with ``DIR`` (another
tree's ``python`` folder, such as main's) first on ``PYTHONPATH``, alternated with the rest.
LitData's ``ParquetLoader`` needs ``polars``: where it is not installed, put it on
``PYTHONPATH`` (``pip install --target DIR polars``), or LitData is recorded as failed.

Usage: ``PYTHONPATH=python nice .venv/bin/python benches/bench_in_place_https.py
[--rows N] [--images N] [--image-group N] [--cases text images] [--libs ...] [--rounds N]
[--rate 40m] [--before DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_in_place as base
from common import format_table, machine, run_worker, timed_pass, worker_main, write_results
from hub_front import HubFront

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs

SCRIPT = Path(__file__).resolve()
LIBS = ("streamx", "streamx-batched", "streamx-hf", "hf", "litdata", "pyarrow", "pyarrow-s3")
BEFORE = ("streamx-before", "streamx-batched-before")
PEERS = ("hf", "litdata", "pyarrow", "pyarrow-s3")
EPOCH_TIMEOUT_S = 900


def _streamx(spec: dict[str, Any]) -> Any:
    import streamx

    lib = spec["lib"].removesuffix("-before")
    if lib == "streamx-hf":
        remote = f"hf://datasets/bench/{spec['name']}/data/*.parquet"
    else:
        folder = f"{spec['endpoint']}/datasets/bench/{spec['name']}/data"
        last = base.FILES - 1
        remote = f"{folder}/train-{{00000..{last:05d}}}-of-{base.FILES:05d}.parquet"
    stream = streamx.ParquetStream(remote=remote, local=spec["local"])
    ds = streamx.StreamingDataset(streams=[stream], batch_size=base.BATCH, shuffle=False)
    if lib == "streamx-batched":
        return streamx.StreamingDataLoader(
            ds, batch_size=base.BATCH, num_workers=spec["workers"], batched=True
        )
    return streamx.StreamingDataLoader(
        ds, batch_size=base.BATCH, num_workers=spec["workers"], collate_fn=base._identity
    )


def _rows(scanner_batches: Any) -> Any:
    for batch in scanner_batches:
        rows = batch.to_pylist()
        for at in range(0, len(rows), base.BATCH):
            yield rows[at : at + base.BATCH]


def _pyarrow(spec: dict[str, Any]) -> Any:
    import pyarrow.dataset as pds

    if spec["lib"] == "pyarrow-s3":
        from pyarrow.fs import S3FileSystem

        fs: Any = S3FileSystem(
            anonymous=True,
            endpoint_override=spec["endpoint"].removeprefix("https://"),
            scheme="https",
            tls_ca_file_path=os.environ["SSL_CERT_FILE"],
            region="us-east-1",
        )
        folder = f"datasets/bench/{spec['name']}/data"
        names = [f"train-{n:05d}-of-{base.FILES:05d}.parquet" for n in range(base.FILES)]
        source: Any = [f"{folder}/{name}" for name in names]
    else:
        from huggingface_hub import HfFileSystem
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        fs = PyFileSystem(FSSpecHandler(HfFileSystem()))
        source = f"datasets/bench/{spec['name']}/data"
    ds = pds.dataset(source, filesystem=fs, format="parquet")
    yield from _rows(ds.to_batches(batch_size=base.BATCH * 32))


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every reader)

    readers = {"hf": base._hf, "litdata": base._litdata, "pyarrow": _pyarrow}
    readers["pyarrow-s3"] = _pyarrow
    make = readers.get(spec["lib"], _streamx)
    # CPU seconds of the whole reader (all its threads; DataLoader workers are not counted,
    # and the inline path has none) and of the loop's own thread: on a loaded machine the
    # wall time swings with the other processes, the CPU a reader spends much less.
    process, main = time.process_time(), time.thread_time()
    result = timed_pass(lambda: make(spec), base._ids, spec["rows"])
    result["cpu_s"] = time.process_time() - process
    result["main_cpu_s"] = time.thread_time() - main
    return result


def _one(
    front: HubFront, scratch_dir: Path, lib: str, name: str, count: int, before_tree: str | None
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=scratch_dir))
    os.environ["HF_HOME"] = str(scratch / "hf")
    spec = {"lib": lib, "name": name, "rows": count, "local": str(scratch / "c")}
    spec |= {"workers": base.WORKERS, "endpoint": front.endpoint}
    before = front.bytes_sent()
    try:
        env = None
        if lib.endswith("-before") and before_tree is not None:
            paths = [before_tree, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        result = run_worker(SCRIPT, spec, timeout=EPOCH_TIMEOUT_S, env=env)
    except Exception as err:  # recorded, not fatal: one reader failing
        print(f"{lib} {name}: failed: {str(err)[-600:]}", flush=True)
        result = {"rows_s": 0.0, "ttfs": None, "correct": False}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result["mb_sent"] = (front.bytes_sent() - before) / 1e6
    result["load"] = os.getloadavg()[0]
    print(f"{lib} {name}: {result}", flush=True)
    return result


def _summary(name: str, mb: float, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per reader its best rows/s and the range of TTFS over the rounds."""
    row: dict[str, Any] = {"case": name, "mb": mb}
    for lib, results in runs.items():
        key = lib.replace("-", "_")
        rates = [r["rows_s"] for r in results]
        ttfs = [r["ttfs"] for r in results if r["ttfs"] is not None]
        row[f"{key}_rows_s"] = max(rates)
        row[f"{key}_rates"] = ", ".join(f"{r:,.0f}" for r in rates)
        row[f"{key}_ttfs"] = ", ".join(f"{t:.2f}" for t in ttfs)
        cpu = [(r["cpu_s"], r["main_cpu_s"]) for r in results if "cpu_s" in r]
        row[f"{key}_cpu"] = ", ".join(f"{c:.1f}/{m:.1f}" for c, m in cpu)
        row[f"{key}_mb"] = max(r["mb_sent"] for r in results)
        row[f"{key}_correct"] = all(r["correct"] for r in results)
    best = max((row.get(f"{p.replace('-', '_')}_rows_s") or 0.0 for p in PEERS), default=0.0)
    for ours in (
        "streamx",
        "streamx_batched",
        "streamx_hf",
        *(b.replace("-", "_") for b in BEFORE),
    ):
        mine = row.get(f"{ours}_rows_s")
        row[f"{ours}_vs_best"] = mine / best if mine and best else None
    return row


COLUMNS = [("case", "case", ""), ("mb", "MB", ".0f")]
for _lib in LIBS + BEFORE:
    _key = _lib.replace("-", "_")
    COLUMNS += [(f"{_key}_rates", f"{_lib} rows/s", ""), (f"{_key}_ttfs", f"{_lib} TTFS s", "")]
    COLUMNS.append((f"{_key}_cpu", f"{_lib} CPU s (process/loop thread)", ""))
for _ours in ("streamx", "streamx_batched", "streamx_hf", *(b.replace("-", "_") for b in BEFORE)):
    COLUMNS.append((f"{_ours}_vs_best", f"{_ours} / best peer", ".2f"))


def main(argv: list[str]) -> int:
    if worker_main(argv, epoch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--image-group", type=int, default=64, help="rows per images row group")
    parser.add_argument("--cases", nargs="+", choices=("text", "images"), default=["text"])
    parser.add_argument("--libs", nargs="+", choices=LIBS + BEFORE, default=list(LIBS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", default="40m", help="nginx limit_rate per connection")
    parser.add_argument("--before", help="another tree's python folder, for the -before libs")
    args = parser.parse_args(argv)
    counts = {"text": args.rows, "images": args.images}
    root = Path(tempfile.mkdtemp(prefix="streamx-in-place-https-")) / "hub"
    rows = []
    try:
        certs = make_certs(Path(tempfile.mkdtemp(prefix="certs-", dir=root.parent)))
        for variable in ("AWS_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
            os.environ[variable] = str(certs.ca)  # read by each worker, a fresh interpreter
        with HubFront(root, Path(certs.chain), Path(certs.key), args.rate) as front:
            os.environ.update(HF_ENDPOINT=front.endpoint, HF_HUB_DISABLE_TELEMETRY="1")
            for name in args.cases:
                mb = base.write_repo(root, name, counts[name], args.image_group) / 1e6
                runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in args.libs}
                for round_ in range(args.rounds):
                    order = list(args.libs) if round_ % 2 == 0 else list(reversed(args.libs))
                    for lib in order:
                        result = _one(front, root.parent, lib, name, counts[name], args.before)
                        runs[lib].append(result)
                rows.append(_summary(name, mb, runs))
                shutil.rmtree(root / "datasets" / "bench" / name, ignore_errors=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    payload = {"machine": machine(), "cases": {c: counts[c] for c in args.cases}, "rows": rows}
    payload |= {"rate": args.rate, "image_group": args.image_group, "rounds": args.rounds}
    print(f"results: {write_results('in_place_https', payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
