"""Cold time to the first sample of a ``ParquetStream`` (``--files`` files named by a brace
pattern, 4 by default) and a ``LitDataStream``, over HTTPS and over ``s3://``, in fresh
processes that alternate this tree with another (``--before DIR``: a python tree with its
own extension).

Both routes are nginx at 40 MB/s per connection: HTTPS with a CA the bench makes, and plain
HTTP standing in for S3 (``S3_ENDPOINT_URL``, path-style; nginx answers the signed
``HEAD`` and ranged GETs a single object needs, which is all these sources ask when their
files are named). The clock starts after ``import torch, streamx`` (streamx's own modules
load lazily inside it, s3fs included where a route imports it); each run prints the
construction's seconds, the first sample's, and whether s3fs was imported.

Usage::

    PYTHONPATH=python .venv/bin/python benches/ttfs_stat.py --runs 6 --before /tmp/before/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import Nginx

from common import S3_BENCH_ENV, compile_streamx

REPO_PYTHON = str(Path(__file__).resolve().parents[1] / "python")
ROWS, LIT_SAMPLES = 50_000, 4_000

CODE = """
import sys, time
import torch, streamx
start = time.perf_counter()
cls = streamx.ParquetStream if sys.argv[1] == "parquet" else streamx.LitDataStream
stream = cls(remote=sys.argv[2], local=sys.argv[3])
dataset = streamx.StreamingDataset(streams=[stream], batch_size=32, shuffle=False)
built = time.perf_counter()
sample = dataset[0]
first = time.perf_counter()
assert int(sample["id"]) == 0
print(round(built - start, 3), round(first - built, 3), round(first - start, 3),
      "s3fs" in sys.modules)
"""


def _write(root: Path, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from litdata.streaming.writer import BinaryWriter

    per = ROWS // files
    (root / "bucket" / "pq").mkdir(parents=True)
    for number in range(files):
        ids = list(range(number * per, (number + 1) * per))
        table = pa.table({"id": ids, "text": [f"row {i} " * 8 for i in ids]})
        pq.write_table(table, root / "bucket" / "pq" / f"p{number}.parquet", row_group_size=4096)
    (root / "bucket" / "lit").mkdir()
    writer = BinaryWriter(str(root / "bucket" / "lit"), chunk_size=1000)
    for i in range(LIT_SAMPLES):
        writer[i] = {"id": i, "data": bytes([i % 256]) * 2000}
    writer.done()
    writer.merge(1)


def _remotes(https: str, files: int) -> dict[tuple[str, str], str]:
    pattern = f"bucket/pq/p{{0..{files - 1}}}.parquet"
    return {
        ("parquet", "https"): f"{https}/{pattern}",
        ("parquet", "s3"): f"s3://{pattern}",
        ("litdata", "https"): f"{https}/bucket/lit",
        ("litdata", "s3"): "s3://bucket/lit",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--before", help="another python tree to alternate with this one")
    parser.add_argument("--files", type=int, default=4, help="Parquet files (one HEAD each)")
    parser.add_argument(
        "--cases",
        default="parquet/https,parquet/s3,litdata/https,litdata/s3",
        help="kind/route,...",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ttfs-stat-")) / "root"
    root.mkdir()
    _write(root, args.files)
    (root.parent / "certs").mkdir()
    certs = make_certs(root.parent / "certs")
    env = {**os.environ, **S3_BENCH_ENV, "SSL_CERT_FILE": str(certs.ca)}
    trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
    with (
        Nginx(root, limit_rate="40m", tls=(certs.chain, certs.key)) as https,
        Nginx(root, limit_rate="40m") as plain,
    ):
        env["S3_ENDPOINT_URL"] = plain.endpoint
        for run in range(args.runs):
            for (kind, route), remote in _remotes(https.endpoint, args.files).items():
                if f"{kind}/{route}" not in args.cases.split(","):
                    continue
                for name in sorted(trees, reverse=run % 2 == 1):  # alternate which goes first
                    local = str(root.parent / f"cache-{kind}-{route}-{name}-{run}")
                    compile_streamx({"PYTHONPATH": trees[name]})
                    got = subprocess.run(
                        [sys.executable, "-c", CODE, kind, remote, local],
                        capture_output=True,
                        text=True,
                        timeout=600,
                        env={**env, "PYTHONPATH": trees[name]},
                        check=False,
                    )
                    fields = got.stdout.split()
                    if len(fields) != 4:
                        raise RuntimeError(f"{name} {kind} {route} failed:\n{got.stderr[-2000:]}")
                    build, first, total, s3fs = fields
                    row = {"kind": kind, "route": route, "tree": name, "run": run}
                    # A process that printed its sample and then died at exit is counted, its
                    # exit status kept: trees before 50016ad abort at exit now and then
                    # (pyarrow's threads freeing our bytes while the interpreter finalizes).
                    row["exit"] = got.returncode
                    row |= {"build_s": float(build), "first_s": float(first)}
                    row |= {"ttfs_s": float(total), "s3fs": s3fs == "True"}
                    print(json.dumps(row), flush=True)
    print(json.dumps({"load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
