"""Converting raw data to MDS: streamx's converter vs LitData's ``optimize`` (0.2.76) with the
same number of workers, and mosaicml-streaming's ``MDSWriter`` loop (one process).

Inputs, generated once per run into a scratch directory:

- ``text``: Parquet, ``--rows`` text rows (``id`` int64, ``text`` 50-200 chars), row groups of
  ``--rows / 64``;
- ``images``: Parquet, ``--images`` random-noise JPEGs of about 100 KB (290x290, q95) in a
  binary column (+ ``label``): 10,000 make about 1 GB;
- ``folder``: the same JPEGs as an image folder (10 classes).

Every measurement runs in a fresh interpreter (``--one``), so no library pays for another's
imports or state. Each writes the same samples from the same input: LitData gets a function
over the Parquet row groups / image files (its ``optimize(fn, inputs)`` shape), storing bytes
as bytes; mosaic's loop reads the same row groups in one process. ``correct`` checks the
sample count read back (and, for streamx, the first and last sample) by each library's reader.

The runs are interleaved (every library and worker count once per round, ``--repeat``
rounds) and each row of the table is the median of its repeats; the load average is
recorded before every run, since the machine may be shared.

Run: ``python benches/bench_convert.py [--rows 1000000] [--images 10000] [--workers 1 2]
[--repeat 3] [--root DIR]`` (``--root`` keeps the generated inputs there for later runs).
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LIBS = ("streamx", "litdata", "mosaic")


def _make_inputs(root: Path, rows: int, images: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from PIL import Image

    rng = np.random.default_rng(0)
    # Each text: 12-44 words of a 1,000-word vocabulary, built column-wise by Arrow.
    words = pa.array([f"w{i}" for i in range(1000)])
    lengths = rng.integers(12, 45, rows)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())
    chosen = words.take(pa.array(rng.integers(0, 1000, int(lengths.sum()))))
    texts = pc.binary_join(pa.ListArray.from_arrays(offsets, chosen), " ")
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "text": texts})
    (root / "text").mkdir()
    pq.write_table(table, root / "text" / "t.parquet", row_group_size=max(1, rows // 64))
    # 100 distinct noise JPEGs (~100 KB each at q95), used in turn: nothing dedups them.
    distinct = []
    for _ in range(min(images, 100)):
        out = io.BytesIO()
        pixels = rng.integers(0, 255, (290, 290, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(out, format="JPEG", quality=95)
        distinct.append(out.getvalue())
    blobs = [distinct[i % len(distinct)] for i in range(images)]
    labels = [i % 10 for i in range(images)]
    for i, blob in enumerate(blobs):
        folder = root / "folder" / f"c{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:07d}.jpg").write_bytes(blob)
    (root / "images").mkdir()
    pq.write_table(
        pa.table({"image": pa.array(blobs, pa.binary()), "label": pa.array(labels, pa.int64())}),
        root / "images" / "i.parquet",
        row_group_size=max(1, images // 64),
        use_dictionary=False,  # the image bytes stored as they are, about 100 KB each
    )


# --- LitData's and mosaic's inputs: the same row groups / files, read the same way. ---


def _row_groups(path: str) -> list[tuple[str, int]]:
    import pyarrow.parquet as pq

    return [(path, g) for g in range(pq.ParquetFile(path).metadata.num_row_groups)]


def _rows_of(spec: tuple[str, int]) -> Any:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(spec[0]).read_row_group(spec[1])
    names = table.column_names
    columns = [table.column(n).to_pylist() for n in names]
    for row in zip(*columns):
        yield dict(zip(names, row))


def _image_files(root: str) -> list[tuple[str, int]]:
    classes = sorted(os.listdir(root))
    return [
        (os.path.join(root, c, f), label)
        for label, c in enumerate(classes)
        for f in sorted(os.listdir(os.path.join(root, c)))
    ]


def _image_sample(spec: tuple[str, int]) -> dict[str, Any]:
    with open(spec[0], "rb") as f:
        return {"image": f.read(), "label": spec[1]}


def _inputs(case: str, root: Path) -> tuple[list[Any], Any]:
    if case == "folder":
        return _image_files(str(root / "folder")), _image_sample
    file = root / case / ("t.parquet" if case == "text" else "i.parquet")
    return _row_groups(str(file)), _rows_of


COLUMNS = {
    "text": {"id": "int64", "text": "str"},
    "images": {"image": "jpeg", "label": "int64"},
    "folder": {"image": "jpeg", "label": "int"},
}


def _one(lib: str, case: str, root: Path, out: Path, workers: int) -> dict[str, Any]:
    """One timed conversion in this (fresh) process; returns its row of results. The clock
    starts after the library's import (torch's, for LitData and mosaic), so the figures
    compare conversion, not interpreter start-up."""
    importlib.import_module(
        {"streamx": "streamx.convert", "litdata": "litdata"}.get(lib, "streaming")
    )
    start = time.perf_counter()
    if lib == "streamx":
        from streamx.convert import convert

        source = root / case
        convert(
            str(source),
            str(out),
            num_workers=workers,
            progress=False,
            format="images" if case == "folder" else "parquet",
        )
    elif lib == "litdata":
        from litdata import optimize

        inputs, fn = _inputs(case, root)
        optimize(
            fn, inputs, output_dir=str(out), num_workers=workers, chunk_bytes="64MB", verbose=False
        )
    else:
        from streaming import MDSWriter

        inputs, fn = _inputs(case, root)
        with MDSWriter(out=str(out), columns=COLUMNS[case]) as writer:
            for spec in inputs:
                rows = fn(spec)
                for sample in rows if not isinstance(rows, dict) else [rows]:
                    writer.write(sample)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "count": _count(lib, out)}


def _count(lib: str, out: Path) -> int:
    if lib == "litdata":
        from litdata import StreamingDataset as LitDataset

        return len(LitDataset(str(out)))
    from streamx import StreamingDataset

    return len(StreamingDataset(local=str(out), batch_size=1))


def _measure(lib: str, case: str, root: Path, workers: int) -> dict[str, Any]:
    out = root / f"out-{lib}-{case}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, __file__, "--one", lib, case, str(root), str(out), str(workers)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["bytes"] = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    shutil.rmtree(out, ignore_errors=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cases", nargs="+", default=["text", "images", "folder"])
    parser.add_argument("--libs", nargs="+", default=list(LIBS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--root", help="keep the generated inputs here (reused if present)")
    parser.add_argument("--one", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        lib, case, root, out, workers = args.one
        print(json.dumps(_one(lib, case, Path(root), Path(out), int(workers))))
        return
    if args.root:
        _run_all(Path(args.root), args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-convert-") as scratch:
        _run_all(Path(scratch), args)


def _run_all(root: Path, args: argparse.Namespace) -> None:
    stamp = root / f"inputs-{args.rows}-{args.images}.done"
    if not stamp.exists():
        for name in ("text", "images", "folder"):
            shutil.rmtree(root / name, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        _make_inputs(root, args.rows, args.images)
        stamp.touch()
    expected = {"text": args.rows, "images": args.images, "folder": args.images}
    results = []
    for round_ in range(args.repeat):
        for case in args.cases:
            for workers in args.workers:
                for lib in args.libs:
                    if lib == "mosaic" and workers != args.workers[0]:
                        continue  # one process whatever the setting
                    load = os.getloadavg()[0]
                    row = _measure(lib, case, root, workers)
                    row.update(
                        lib=lib,
                        case=case,
                        workers=1 if lib == "mosaic" else workers,
                        correct=row["count"] == expected[case],
                        round=round_,
                        loadavg=load,
                    )
                    results.append(row)
                    print(json.dumps(row), flush=True)
    _report(results, args)


def _report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    loads = [r["loadavg"] for r in results]
    print(
        f"\nrows={args.rows} images={args.images} cpus={os.cpu_count()} repeats={args.repeat} "
        f"load average {min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})"
    )
    print(
        "| case | workers | streamx s | LitData s | mosaic loop s | vs LitData | vs mosaic "
        "| correct |"
    )
    print("|---|---|---|---|---|---|---|---|")

    def median(lib: str, case: str, workers: int) -> tuple[float, bool]:
        rows = [r for r in results if (r["lib"], r["case"], r["workers"]) == (lib, case, workers)]
        if not rows:
            return float("nan"), True
        return statistics.median(r["seconds"] for r in rows), all(r["correct"] for r in rows)

    for case in args.cases:
        mosaic, ok_m = median("mosaic", case, 1)
        for workers in args.workers:
            (ours, ok_s), (lit, ok_l) = (
                median("streamx", case, workers),
                median("litdata", case, workers),
            )
            print(
                f"| {case} | {workers} | {ours:.2f} | {lit:.2f} | {mosaic:.2f} | "
                f"{lit / ours:.1f}x | {mosaic / ours:.1f}x | {ok_s and ok_l and ok_m} |"
            )
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (RESULTS_DIR / f"convert-{stamp}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
