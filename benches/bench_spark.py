"""Spark DataFrames to MDS on Spark ``local[2]``: streamx's ``dataframe_to_mds`` (and
``streamx.spark.write_mds``) against mosaicml-streaming 0.13.0's ``dataframe_to_mds``.

One Spark session runs every conversion of the same cached DataFrame (``--rows`` text rows
from Parquet, ``id`` int64 + ``text``, repartitioned into ``--partitions``), so the input is
read once and each run measures the conversion: the tasks' writers and the index merge.
Each library first converts a tiny DataFrame, so that the Python workers Spark reuses have
imported it before the clock runs. Then ``--repeat`` rounds run every library once each,
in alternating order; the table gives medians and the load average before each run.
``correct``: every shard of every partition is byte for byte mosaic's, the merged index
lists the same shards, and streamx reads back every row.

Run: ``python benches/bench_spark.py --parquet DIR/text/t.parquet [--repeat 3]`` (the text
input of ``bench_convert.py --root DIR``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LIBS = ("streamx", "mosaic", "streamx.spark")
COLUMNS = {"id": "int64", "text": "str"}


def _convert(lib: str, df: Any, out: str) -> None:
    if lib == "streamx":
        from streamx.base.converters import dataframe_to_mds

        dataframe_to_mds(df, mds_kwargs={"out": out, "columns": COLUMNS})
    elif lib == "mosaic":
        from streaming.base.converters import dataframe_to_mds

        dataframe_to_mds(df, mds_kwargs={"out": out, "columns": COLUMNS})
    else:
        from streamx.spark import write_mds

        write_mds(df, out, columns=COLUMNS)


def _shard_digests(root: str) -> list[list[str]]:
    """Per partition directory (in index order), the digests of its files but the index."""
    with open(os.path.join(root, "index.json")) as f:
        shards = json.load(f)["shards"]
    parts: dict[str, list[str]] = {}
    for shard in shards:
        name = (shard.get("zip_data") or shard["raw_data"])["basename"]
        part = name.split("/")[0]
        with open(os.path.join(root, name), "rb") as f:
            parts.setdefault(part, []).append(hashlib.sha1(f.read()).hexdigest())
    return list(parts.values())


def _count(root: str) -> int:
    from streamx import StreamingDataset

    return len(StreamingDataset(local=root, batch_size=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parquet", required=True)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--libs", nargs="+", default=list(LIBS))
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(args.parquet).repartition(args.partitions).cache()
    rows = df.count()
    scratch = tempfile.mkdtemp(prefix="bench-spark-")
    tiny = spark.createDataFrame([(1, "a"), (2, "b")], "id long, text string").repartition(2)
    for lib in args.libs:
        _convert(lib, tiny, os.path.join(scratch, f"warm-{lib}"))
    results: list[dict[str, Any]] = []
    reference: list[list[str]] | None = None
    for round_ in range(args.repeat):
        order = args.libs if round_ % 2 == 0 else list(reversed(args.libs))
        for lib in order:
            out = os.path.join(scratch, f"{lib}-{round_}")
            load = os.getloadavg()[0]
            start = time.perf_counter()
            _convert(lib, df, out)
            seconds = time.perf_counter() - start
            digests = _shard_digests(out)
            if lib == "mosaic" and reference is None:
                reference = digests
            row = {
                "lib": lib,
                "round": round_,
                "seconds": seconds,
                "loadavg": load,
                "count": _count(out),
                "digests": digests,
            }
            results.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "digests"}), flush=True)
    for row in results:
        row["correct"] = row["count"] == rows and row.pop("digests") == reference
    spark.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    _report(results, rows, args)


def _report(results: list[dict[str, Any]], rows: int, args: argparse.Namespace) -> None:
    loads = [r["loadavg"] for r in results]
    print(
        f"\nrows={rows} partitions={args.partitions} repeats={args.repeat} load average "
        f"{min(loads):.1f}-{max(loads):.1f} (median {statistics.median(loads):.1f})"
    )
    mosaic = statistics.median(r["seconds"] for r in results if r["lib"] == "mosaic")
    print("| converter | median s | runs s | vs mosaic | correct |")
    print("|---|---|---|---|---|")
    for lib in args.libs:
        mine = [r for r in results if r["lib"] == lib]
        med = statistics.median(r["seconds"] for r in mine)
        runs = ", ".join(f"{r['seconds']:.1f}" for r in mine)
        ok = all(r["correct"] for r in mine)
        print(f"| {lib} | {med:.2f} | {runs} | {mosaic / med:.2f}x | {ok} |")
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (RESULTS_DIR / f"spark-{stamp}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
