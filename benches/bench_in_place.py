"""Parquet read in place from the Hugging Face Hub: streamx vs HF ``datasets`` streaming,
pyarrow's dataset scanner and LitData, on the same files.

A local server answers the Hub's API (``tests/in_place/hub_server.py``, reached through
``HF_ENDPOINT``, as every test of ``hf://`` is) and serves a repository of Parquet files:

- ``text``: ``--rows`` rows in 4 files, row groups of ``rows / 64`` per file, 10 columns
  (``id``, ``text`` of 12-44 words, and 8 numeric or short-string columns);
- ``images``: ``--images`` rows in 4 files, row groups of 64 rows, 3 columns (``id``,
  ``label``, ``jpeg`` of 90-110 KB random bytes);
- ``numeric``: ``--numeric`` rows in 4 files, row groups of ``rows / 64`` per file, 16
  columns of numbers (``id``, 8 ``float32``, 4 ``int32``, a ``bool``, a ``float32`` list of
  16 and an ``int32`` list of 32 per row).

Each reader reads the split cold (empty caches), in a fresh interpreter:

- ``streamx``: ``ParquetStream(remote="hf://datasets/bench/NAME/data/*.parquet")``, its
  ``StreamingDataLoader`` with 2 workers, batch 32, identity collate, no shuffle;
- ``streamx-2cols``: the same, ``columns=["id", "text"]`` (text) or ``["id", "label"]``
  (images): the projection;
- ``streamx-batched``, ``streamx-per-sample``: the same loader with torch's default
  collation, on its batched path (workers read each batch column by column into arrays)
  and with ``batched=False`` (each worker decodes sample dicts and collates them with
  ``default_collate``): the batches are equal, tensors and lists;
- ``hf``: ``datasets.load_dataset("bench/NAME", split="train", streaming=True)`` through
  torch's ``DataLoader`` (2 workers, batch 32, identity collate);
- ``pyarrow``: ``pyarrow.dataset`` over ``HfFileSystem``, ``to_batches()`` in one process;
- ``litdata``: LitData's ``index_parquet_dataset`` and ``StreamingDataset`` with its
  ``ParquetLoader`` on the ``hf://`` URL, 2 workers started by ``spawn`` (its loader refuses
  ``fork``), recorded as failed if it cannot.

Reported: rows/s over the epoch, time to the first batch (from building the dataset),
bytes the server sent, and ``correct``: every id exactly once.

``--workers N`` sets the loaders' workers (default 2; 0 reads in the measuring process).
``--local`` reads the same files from local disk instead (``ParquetStream`` and LitData
over the directory; the other readers are Hub-only and refused). ``--server https-40m``
serves them from nginx over HTTPS instead of the Hub, capped at 40 MB/s per connection as
S3 serves each GET (a CA made by the bench, trusted through ``AWS_CA_BUNDLE`` and
``SSL_CERT_FILE``); streamx reads the files by name (``train-{00000..00003}-of-00004``:
a plain HTTP server cannot list), and only its readers run. ``--image-group N`` sets the
images' row group (default 64 rows, about 6.4 MB; 640 rows is a 64 MB row group).

Usage: ``nice python benches/bench_in_place.py [--rows N] [--images N] [--numeric N]
[--cases ...] [--libs ...] [--workers N] [--local] [--server hub|https-40m]
[--image-group N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from common import format_table, machine, run_worker, timed_pass, worker_main, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "in_place"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from hub_server import HubServer
from nginx_server import Nginx

SCRIPT = Path(__file__).resolve()
LIBS = (
    "streamx",
    "streamx-2cols",
    "streamx-batched",
    "streamx-per-sample",
    "hf",
    "pyarrow",
    "litdata",
)
LOCAL_LIBS = ("streamx", "streamx-2cols", "streamx-batched", "streamx-per-sample", "litdata")
HTTPS_LIBS = LOCAL_LIBS[:-1]
# name -> nginx's limit_rate per connection ("hub": the Hub's API, unthrottled)
SERVERS: dict[str, str | None] = {"hub": None, "https-40m": "40m"}
CASES = ("text", "images", "numeric")
PEERS = ("hf", "pyarrow", "litdata")
BATCH, WORKERS, FILES = 32, 2, 4
EPOCH_TIMEOUT_S = 600


def _text_table(rows: int, start: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(start)
    vocabulary = pa.array([f"w{i}" for i in range(1000)])
    lengths = rng.integers(12, 45, rows)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    chosen = pc.take(vocabulary, pa.array(rng.integers(0, 1000, int(lengths.sum()))))
    ids = np.arange(start, start + rows, dtype=np.int64)
    columns: dict[str, Any] = {
        "id": ids,
        "text": pc.binary_join(pa.ListArray.from_arrays(offsets, chosen), " "),
    }
    for k in range(4):
        columns[f"n{k}"] = ids * (k + 2)
        columns[f"f{k}"] = rng.random(rows)
    return pa.table(columns)


def _image_table(rows: int, start: int) -> Any:
    import pyarrow as pa

    rng = np.random.default_rng(start)
    # Every row's bytes its own: repeated values would be dictionary-encoded away.
    blobs = [rng.bytes(int(rng.integers(90_000, 110_000))) for _ in range(rows)]
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({"id": ids, "label": ids % 1000, "jpeg": pa.array(blobs, pa.binary())})


def _numeric_table(rows: int, start: int) -> Any:
    import pyarrow as pa

    rng = np.random.default_rng(start)
    ids = np.arange(start, start + rows, dtype=np.int64)
    columns: dict[str, Any] = {"id": ids}
    for k in range(8):
        columns[f"f{k}"] = rng.random(rows, np.float32)
    for k in range(4):
        columns[f"n{k}"] = (ids * (k + 3) % 100_003).astype(np.int32)
    columns["flag"] = ids % 3 == 0
    embedding = pa.array(rng.random(rows * 16, np.float32))
    columns["embedding"] = pa.FixedSizeListArray.from_arrays(embedding, 16)
    tokens = pa.array(rng.integers(0, 50_000, rows * 32, dtype=np.int32))
    offsets = pa.array(np.arange(0, rows * 32 + 1, 32, dtype=np.int32))
    columns["tokens"] = pa.ListArray.from_arrays(offsets, tokens)
    return pa.table(columns)


def _table(name: str, rows: int, start: int) -> Any:
    if name == "text":
        return _text_table(rows, start)
    return _numeric_table(rows, start) if name == "numeric" else _image_table(rows, start)


def write_repo(root: Path, name: str, rows: int, image_group: int = 64) -> int:
    """Writes the repository ``bench/NAME``; returns its bytes."""
    import pyarrow.parquet as pq

    folder = root / "datasets" / "bench" / name / "data"
    folder.mkdir(parents=True)
    per = -(-rows // FILES)
    for number in range(FILES):
        start, count = number * per, min(per, rows - number * per)
        table = _table(name, count, start)
        group = image_group if name == "images" else max(1, rows // 64)
        path = folder / f"train-{number:05d}-of-{FILES:05d}.parquet"
        pq.write_table(table, path, row_group_size=group)
    return sum(p.stat().st_size for p in folder.iterdir())


def _identity(batch: list[Any]) -> list[Any]:
    return batch


def _ids(batch: Any) -> list[int]:
    if isinstance(batch, dict):  # torch's default collation: a tensor of ids
        return [int(i) for i in batch["id"].tolist()]
    return [int(row["id"]) for row in batch]


def _source(spec: dict[str, Any]) -> str:
    """The split's files: on the Hub, or (``--local``) the directory they were written to."""
    return spec["folder"] if spec.get("folder") else f"hf://datasets/bench/{spec['name']}/data"


def _files(spec: dict[str, Any]) -> str:
    """The split's Parquet files as streamx names them: a glob, or over plain HTTPS (which
    cannot list) by brace expansion."""
    if not spec.get("endpoint"):
        return f"{_source(spec)}/*.parquet"
    folder = f"{spec['endpoint']}/datasets/bench/{spec['name']}/data"
    return f"{folder}/train-{{00000..{FILES - 1:05d}}}-of-{FILES:05d}.parquet"


def _streamx(spec: dict[str, Any]) -> Any:
    import streamx

    columns = None
    if spec["lib"] == "streamx-2cols":
        columns = ["id", "text"] if spec["name"] == "text" else ["id", "label"]
    stream = streamx.ParquetStream(remote=_files(spec), local=spec["local"], columns=columns)
    ds = streamx.StreamingDataset(streams=[stream], batch_size=BATCH, shuffle=False)
    if spec["lib"] in ("streamx-batched", "streamx-per-sample"):  # default collation
        batched = spec["lib"] == "streamx-batched"
        loader = streamx.StreamingDataLoader(
            ds, batch_size=BATCH, num_workers=spec["workers"], batched=batched
        )
        assert loader._batched == batched
        return loader
    return streamx.StreamingDataLoader(
        ds, batch_size=BATCH, num_workers=spec["workers"], collate_fn=_identity
    )


def _hf(spec: dict[str, Any]) -> Any:
    import datasets
    from torch.utils.data import DataLoader

    ds = datasets.load_dataset(f"bench/{spec['name']}", split="train", streaming=True)
    return DataLoader(ds, batch_size=BATCH, num_workers=spec["workers"], collate_fn=_identity)


def _pyarrow(spec: dict[str, Any]) -> Any:
    import pyarrow.dataset as pds
    from huggingface_hub import HfFileSystem
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    fs = PyFileSystem(FSSpecHandler(HfFileSystem()))
    ds = pds.dataset(f"datasets/bench/{spec['name']}/data", filesystem=fs, format="parquet")
    for batch in ds.to_batches(batch_size=BATCH * 32):
        yield [{"id": i} for i in batch.column("id").to_numpy().tolist()]


def _litdata(spec: dict[str, Any]) -> Any:
    import litdata
    from litdata.streaming.item_loader import ParquetLoader

    url = _source(spec)
    os.makedirs(spec["local"], exist_ok=True)
    litdata.index_parquet_dataset(url, cache_dir=spec["local"])
    ds = litdata.StreamingDataset(url, item_loader=ParquetLoader(), index_path=spec["local"])
    # Its ParquetLoader refuses fork (Polars' thread pool): spawn, as its error asks.
    return litdata.StreamingDataLoader(
        ds,
        batch_size=BATCH,
        num_workers=spec["workers"],
        collate_fn=_identity,
        multiprocessing_context="spawn" if spec["workers"] else None,
    )


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every reader)

    readers = {"hf": _hf, "pyarrow": _pyarrow, "litdata": _litdata}
    make = readers.get(spec["lib"], _streamx)
    return timed_pass(lambda: make(spec), _ids, spec["rows"])


@contextlib.contextmanager
def _serving(root: Path, server: str) -> Iterator[tuple[str | None, Callable[[], int]]]:
    """Serves ``root``; yields nginx's endpoint (None for the Hub) and the bytes it has sent."""
    if server == "hub":
        with HubServer(root) as hub:
            os.environ.update(HF_ENDPOINT=hub.endpoint, HF_HUB_DISABLE_TELEMETRY="1")
            yield None, lambda: hub.bytes_sent
        return
    certs = make_certs(Path(tempfile.mkdtemp(prefix="certs-", dir=root.parent)))
    for variable in ("AWS_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        os.environ[variable] = str(certs.ca)  # read by each worker, a fresh interpreter
    with Nginx(root, limit_rate=SERVERS[server], tls=(certs.chain, certs.key)) as nginx:
        yield nginx.endpoint, lambda: sum(entry.sent for entry in nginx.log())


def bench(
    root: Path,
    cases: dict[str, int],
    libs: tuple[str, ...],
    local: bool,
    workers: int,
    server: str = "hub",
) -> list[dict[str, Any]]:
    rows = []
    with _serving(root, server) as (endpoint, bytes_sent):
        for name, count in cases.items():
            size = sum(p.stat().st_size for p in (root / "datasets" / "bench" / name).rglob("*"))
            row: dict[str, Any] = {"case": name, "server": server, "rows": count}
            row["mb"] = size / 1e6
            for lib in libs:
                scratch = Path(tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=root.parent))
                os.environ["HF_HOME"] = str(scratch / "hf")
                spec = {
                    "lib": lib,
                    "name": name,
                    "rows": count,
                    "local": str(scratch / "c"),
                    "workers": workers,
                }
                if local:
                    spec["folder"] = str(root / "datasets" / "bench" / name / "data")
                if endpoint is not None:
                    spec["endpoint"] = endpoint
                before = bytes_sent()
                try:
                    result = run_worker(SCRIPT, spec, timeout=EPOCH_TIMEOUT_S)
                except Exception as err:  # recorded, not fatal: one reader failing
                    print(f"{lib} {name}: failed: {str(err)[-400:]}", flush=True)
                    result = {"rows_s": 0.0, "ttfs": None, "correct": False}
                shutil.rmtree(scratch, ignore_errors=True)
                key = lib.replace("-", "_")
                row[f"{key}_rows_s"] = result["rows_s"]
                row[f"{key}_ttfs"] = result["ttfs"]
                row[f"{key}_mb_sent"] = (bytes_sent() - before) / 1e6
                row[f"{key}_correct"] = result["correct"]
                print(lib, name, result, f"{row[f'{key}_mb_sent']:.1f} MB sent", flush=True)
            for peer in PEERS:
                theirs, ours = row.get(f"{peer}_rows_s"), row.get("streamx_rows_s")
                row[f"vs_{peer}"] = ours / theirs if theirs and ours else None
            batched = row.get("streamx_batched_rows_s")
            for other in ("streamx_per_sample", "litdata"):
                theirs = row.get(f"{other}_rows_s")
                row[f"batched_vs_{other}"] = batched / theirs if batched and theirs else None
            rows.append(row)
    return rows


COLUMNS = [
    ("case", "case", ""),
    ("server", "server", ""),
    ("mb", "MB", ".0f"),
    ("streamx_rows_s", "streamx rows/s", ",.0f"),
    ("streamx_2cols_rows_s", "streamx 2 cols rows/s", ",.0f"),
    ("streamx_batched_rows_s", "streamx batched rows/s", ",.0f"),
    ("streamx_per_sample_rows_s", "streamx per-sample rows/s", ",.0f"),
    ("hf_rows_s", "HF datasets rows/s", ",.0f"),
    ("pyarrow_rows_s", "pyarrow rows/s", ",.0f"),
    ("litdata_rows_s", "LitData rows/s", ",.0f"),
    ("vs_hf", "vs HF", ".2f"),
    ("vs_pyarrow", "vs pyarrow", ".2f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("batched_vs_streamx_per_sample", "batched vs per-sample", ".2f"),
    ("batched_vs_litdata", "batched vs LitData", ".2f"),
    ("streamx_ttfs", "streamx TTFS s", ".2f"),
    ("hf_ttfs", "HF TTFS s", ".2f"),
    ("pyarrow_ttfs", "pyarrow TTFS s", ".2f"),
    ("streamx_mb_sent", "streamx MB", ".0f"),
    ("streamx_2cols_mb_sent", "2 cols MB", ".0f"),
    ("hf_mb_sent", "HF MB", ".0f"),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, epoch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--numeric", type=int, default=1_000_000)
    parser.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    parser.add_argument("--cases", nargs="+", choices=CASES, default=["text", "images"])
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--local", action="store_true", help="read the files from local disk")
    parser.add_argument(
        "--server",
        choices=list(SERVERS),
        default="hub",
        help="hub: the Hub's API; https-40m: nginx over HTTPS, 40 MB/s per connection",
    )
    parser.add_argument("--image-group", type=int, default=64, help="rows per images row group")
    args = parser.parse_args(argv)
    if args.local and set(args.libs) - set(LOCAL_LIBS):
        parser.error(f"--local reads with {', '.join(LOCAL_LIBS)} only")
    if args.server != "hub":
        if args.local:
            parser.error("--local reads no server")
        if set(args.libs) - set(HTTPS_LIBS):
            parser.error(f"--server {args.server} reads with {', '.join(HTTPS_LIBS)} only")
    counts = {"text": args.rows, "images": args.images, "numeric": args.numeric}
    cases = {name: counts[name] for name in args.cases}
    root = Path(tempfile.mkdtemp(prefix="streamx-in-place-")) / "hub"
    try:
        for name, count in cases.items():
            write_repo(root, name, count, args.image_group)
        rows = bench(root, cases, tuple(args.libs), args.local, args.workers, args.server)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    payload = {
        "machine": machine(),
        "cases": cases,
        "local": args.local,
        "server": args.server,
        "image_group": args.image_group,
        "workers": args.workers,
        "rows": rows,
    }
    path = write_results("in_place", payload)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
