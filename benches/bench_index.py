"""Dataset construction over a very large index (issues 13 and 24): 650k shards, a ~200 MB
``index.json``, no shard files (construction reads only the index).

Two cases (``--cases``):

* ``local``: the index in ``local``, no remote;
* ``remote``: the index served by nginx as an S3 bucket (``remote="s3://..."``) into an
  empty cache directory, so construction also downloads the index and sets up the shard
  cache (its ledger and the check of which shards are cached already).

Each row is one fresh interpreter that imports its library (and torch), records its peak
RSS, then times ``StreamingDataset(...)`` plus ``len(ds)``; ``rss_mb`` is the peak
resident size of the whole process, ``rss_growth_mb`` how much construction added to the
peak after imports. Libraries run interleaved, ``--repeat`` times each, and medians are
reported (wall and CPU seconds; on a shared machine CPU time is the steadier figure).

* ``streamx`` and ``streaming`` (mosaicml-streaming 0.13.0, the oracle) read the same MDS
  index, written as mosaicml-streaming writes them;
* ``litdata`` reads an index of its own format with as many chunks (its entries are smaller,
  so its file is about a third the size), when LitData is installed.

``correct``: the dataset reports the expected number of samples.

mosaicml-streaming runs the remote case only with ``--mosaic-remote`` (it took minutes in the
local case alone).

Usage: ``python benches/bench_index.py [--shards N] [--repeat N] [--cases local remote]
[--before OTHER_CHECKOUT/python]`` (``--before``: also runs that tree's streamx, as
``streamx-before``, in the same run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from common import (
    S3_BENCH_ENV,
    format_table,
    machine,
    run_worker,
    status_mib,
    timed_cpu,
    worker_main,
    write_results,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "format"))
from big_index import shard_samples, write_big_index
from nginx_server import Nginx

LIBS = ("streamx", "litdata", "streaming")


def _peak_mb() -> float:
    return status_mib("VmHWM")


def _construct(spec: dict[str, Any]) -> dict[str, Any]:
    lib, local, remote = spec["lib"], spec["local"], spec.get("remote")
    os.environ.update(spec.get("env", {}))
    if spec.get("tree"):  # another streamx checkout's python/ (--before)
        sys.path.insert(0, spec["tree"])
        lib = "streamx"
    if lib == "litdata":
        import litdata
        from litdata.streaming.resolver import Dir

        def build_lit() -> Any:
            if remote is None:
                return litdata.StreamingDataset(input_dir=f"local:{local}")
            return litdata.StreamingDataset(
                Dir(path=local, url=remote), storage_options={"endpoint_url": spec["endpoint"]}
            )

        before = _peak_mb()
        wall, cpu, ds = timed_cpu(build_lit)
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
            return StreamingDataset(remote=remote, local=local, batch_size=8)

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


BUCKET = "bucket"


def _spec(
    lib: str, case: str, tmp: str, endpoint: str | None, before: str | None
) -> dict[str, Any]:
    """One worker's arguments; each remote run gets an empty cache directory."""
    name = "lit" if lib == "litdata" else "mds"
    tree = before if lib == "streamx-before" else None
    if case == "local":
        return {"lib": lib, "local": os.path.join(tmp, BUCKET, name), "tree": tree}
    assert endpoint is not None
    return {
        "lib": lib,
        "tree": tree,
        "local": tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=tmp),
        "remote": f"s3://{BUCKET}/{name}",
        "endpoint": endpoint,
        "env": {**S3_BENCH_ENV, "S3_ENDPOINT_URL": endpoint},
    }


def _run_case(
    case: str, libs: list[str], repeat: int, tmp: str, endpoint: str | None, before: str | None
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in libs}
    for _ in range(repeat):
        for lib in libs:
            spec = _spec(lib, case, tmp, endpoint, before)
            runs[lib].append(run_worker(Path(__file__), spec))
            if "remote" in spec:
                shutil.rmtree(spec["local"], ignore_errors=True)
            print(
                case, lib, json.dumps(runs[lib][-1]), os.getloadavg(), file=sys.stderr, flush=True
            )
    return runs


def _rows(
    case: str, shards: int, expected: int, runs: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    rows = []
    base_lib = next(lib for lib in ("streaming", "litdata", "streamx") if lib in runs)
    base = {k: statistics.median(r[k] for r in runs[base_lib]) for k in ("wall_s", "cpu_s")}
    for lib, results in runs.items():
        row: dict[str, Any] = {"case": case, "lib": lib, "shards": shards}
        for key in ("wall_s", "cpu_s", "rss_mb", "rss_growth_mb"):
            row[key] = statistics.median(r[key] for r in results)
        row["base"] = base_lib
        row["wall_ratio"] = base["wall_s"] / row["wall_s"]
        row["cpu_ratio"] = base["cpu_s"] / row["cpu_s"]
        row["correct"] = all(r["samples"] == expected for r in results)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=650_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="65k shards, one repeat")
    parser.add_argument(
        "--cases", nargs="+", choices=("local", "remote"), default=["local", "remote"]
    )
    parser.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    parser.add_argument("--mosaic-remote", action="store_true", help="also run mosaic remote")
    parser.add_argument(
        "--before", help="another checkout's python/ directory, run as streamx-before"
    )
    args = parser.parse_args()
    shards, repeat = (65_000, 1) if args.quick else (args.shards, args.repeat)
    libs = [lib for lib in args.libs if lib != "litdata" or _has_litdata()]
    if args.before:
        libs.insert(1, "streamx-before")
    expected = sum(shard_samples(i) for i in range(shards))
    info = machine()
    rows: list[dict[str, Any]] = []
    all_runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mds = os.path.join(tmp, BUCKET, "mds")
        index_mb = os.path.getsize(write_big_index(mds, shards)) / 2**20
        if "litdata" in libs:
            _litdata_index(os.path.join(tmp, BUCKET, "lit"), shards)
        for case in args.cases:
            case_libs = [
                lib for lib in libs if case == "local" or lib != "streaming" or args.mosaic_remote
            ]
            if case == "remote":
                with Nginx(tmp) as server:
                    runs = _run_case(case, case_libs, repeat, tmp, server.endpoint, args.before)
            else:
                runs = _run_case(case, case_libs, repeat, tmp, None, args.before)
            all_runs[case] = runs
            rows += _rows(case, shards, expected, runs)
    print(f"index.json: {index_mb:.0f} MB, {shards} shards; load average {os.getloadavg()}")
    print(format_table(rows, [
        ("case", "case", ""), ("lib", "library", ""), ("shards", "shards", ","),
        ("wall_s", "wall s", ".2f"), ("cpu_s", "CPU s", ".2f"), ("rss_mb", "peak RSS MB", ".0f"),
        ("rss_growth_mb", "RSS growth MB", ".0f"), ("base", "vs", ""),
        ("wall_ratio", "wall vs", ".2f"), ("cpu_ratio", "CPU vs", ".2f"),
        ("correct", "correct", ""),
    ]))  # fmt: skip
    write_results("index", {"machine": info, "index_mb": index_mb, "rows": rows, "runs": all_runs})


def _has_litdata() -> bool:
    try:
        import litdata  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], _construct):
        main()
