"""Cold epochs from an S3-like server: streamx vs LitData 0.2.76, WebDataset 1.0.2 and
mosaicml-streaming.

nginx (from the distribution) serves a bucket directory on a free loopback port; it answers
path-style S3 GETs, HEADs and ranged GETs. Each library reads its own copy of the same
samples (MDS shards for streamx and mosaicml-streaming, written once by streamx; LitData's
chunks written by ``litdata.optimize``; WebDataset's tar shards by its ``ShardWriter``, see
``wds_peer.py``), 64 MiB shards/chunks, no compression, through its own
``StreamingDataLoader`` (2 workers, batch 32, no shuffle, identity collate; for WebDataset,
torch's ``DataLoader`` over ``WebDataset``, which streams each shard's GET through ``curl``
with no cache), with an empty cache, in a fresh interpreter. Twice in the same run: nginx
unthrottled, and with ``limit_rate 40m`` per connection (S3 serves each GET at tens of
MB/s). ``curl`` fetching the same shard files (8 transfers at once, as one process or as
two, written to files, best of 3) gives the loopback's limit.

Workloads: ``img`` (samples of about 100 KB of bytes plus an int label) and ``tokens``
(``uint32[2048]``, the first token the sample's id). Reported: samples/s over the epoch,
time to the first batch (from building the dataset, index download included), ratios, and
``correct``: every sample exactly once with its content checked. For streamx's and LitData's
best runs, the share of the machine's cores busy over the epoch (the server's work included)
and the CPU seconds nginx spent in it: on this 2-core VM nginx's TLS encryption runs on the
reader's cores, as a real store's does not.

``--collate default`` uses torch's default collation for every library instead (what a
drop-in user who passes no ``collate_fn`` has; streamx then reads batches in the training
process, without worker processes).

``--servers`` picks the servers (default ``unthrottled 40m``). ``rtt10ms-1gbit`` is a link
with latency: nginx answers every request 10 ms late (one round trip of a 10 ms RTT link,
through Debian's echo module) and sends at 1 Gbit/s per connection. This VM's kernel has
no netem, so the link itself cannot be shaped; TCP's own round trips on loopback stay
free.

``https``, ``https-40m``, ``https-10ms`` and ``https-40m-503`` serve the same over TLS with
a certificate signed by a CA the bench makes (trusted through ``AWS_CA_BUNDLE``,
``CURL_CA_BUNDLE`` and ``REQUESTS_CA_BUNDLE``); the last answers ``503`` with
``Retry-After: 1`` to requests past 40 per second (``limit_req``). ``--libs streamx-pyssl``
runs streamx with its HTTPS bodies read through Python's ``ssl`` (``STREAMX_RUST_TLS=0``),
the path before rustls. ``40m-503`` is ``https-40m-503`` over plain HTTP (Rust's ranged GETs
there read a 503's short page as its TLS sessions do).

``--wds-too`` adds streamx reading WebDataset's tars in place (``streamx-wds``: brace
names, each tar's headers scanned; ``streamx-wds-index``: a wids shard index), ``--lit-too``
streamx reading LitData's chunks in place, ``--whole-too`` streamx with range reads off,
``--shuffle`` shuffled epochs (not WebDataset, whose shuffle is a buffer over shards read in
order), and ``--before DIR --libs streamx-before ...`` another build's epochs next to ours.
Over HTTPS each epoch also reports nginx's count of TLS handshakes, resumptions and suites.

Usage: ``nice python benches/bench_objstore.py [--img N] [--tokens N] [--repeat R]
[--collate identity|default] [--servers S ...] [--whole-too]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import wds_peer
from common import S3_BENCH_ENV, format_table, machine, run_worker, worker_main, write_results
from cpu_share import CpuWatch
from curl_limit import curl_limit
from objstore_columns import COLUMNS, CPU_COLUMNS, PYSSL_COLUMNS, WHOLE_COLUMNS
from objstore_in_place import IN_PLACE_LIBS, LIT_COLUMNS, WDS_COLUMNS, in_place_loader
from objstore_samples import (
    CHECK_EVERY,
    blob_pool,
    check_token_columns,
    expected_tokens,
    make_sample,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import Nginx, TlsEntry

SCRIPT = Path(__file__).resolve()
BUCKET = "bucket"
SHARD = 64 << 20
BATCH = 32
WORKERS = 2
LIBS = ("streamx", "litdata", "webdataset", "streaming")
PEERS = ("litdata", "webdataset", "streaming")
EPOCH_TIMEOUT_S = 120
# name -> (nginx limit_rate per connection, delay per request in ms, limit_req rate, HTTPS)
SERVERS: dict[str, tuple[str | None, int | None, str | None, bool]] = {
    "unthrottled": (None, None, None, False),
    "40m": ("40m", None, None, False),
    "rtt10ms-1gbit": ("119m", 10, None, False),  # 119 MiB/s is 1 Gbit/s
    "https": (None, None, None, True),
    "https-40m": ("40m", None, None, True),
    "https-10ms": (None, 10, None, True),
    # limit_req answers 503 (Retry-After: 1) to requests past 40 per second, a share of them
    "https-40m-503": ("40m", None, "40r/s", True),
    "40m-503": ("40m", None, "40r/s", False),
}


def write(spec: dict[str, Any]) -> dict[str, Any]:
    workload, count, out = spec["workload"], spec["count"], spec["out"]
    if spec["lib"] == "webdataset":
        wds_peer.write(out, workload, (make_sample(workload, i) for i in range(count)), SHARD)
        from streamx.format.webdataset.write_index import write_shard_index

        write_shard_index(out, f"{out}/index.json")  # for streamx-wds-index
        return {}
    if spec["lib"] == "litdata":
        import litdata

        litdata.optimize(
            fn=functools.partial(make_sample, workload),
            inputs=list(range(count)),
            output_dir=out,
            chunk_bytes=SHARD,
            num_workers=1,
            mode="overwrite",
        )
        return {}
    import streamx

    columns = (
        {"label": "int", "data": "bytes"}
        if workload == "img"
        else {"tokens": "ndarray:uint32:2048"}
    )
    with streamx.MDSWriter(out=out, columns=columns, size_limit=SHARD) as writer:
        for i in range(count):
            writer.write(make_sample(workload, i))
    return {}


def _identity(batch: list[Any]) -> list[Any]:
    return batch


def _collate(spec: dict[str, Any]) -> dict[str, Any]:
    """The loader's collation argument: none (torch's default) or the identity."""
    return {} if spec.get("collate") == "default" else {"collate_fn": _identity}


def _samples(batch: Any) -> Any:
    """The batch's samples as dicts, whether collated (a dict of columns) or not (a list)."""
    if not isinstance(batch, dict):
        return batch
    columns = {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in batch.items()}
    size = len(next(iter(columns.values())))
    return ({k: v[j] for k, v in columns.items()} for j in range(size))


def _loader(spec: dict[str, Any]) -> Any:
    remote = (
        f"s3://{BUCKET}/{spec['lib'] if spec['lib'] == 'litdata' else 'mds'}-{spec['workload']}"
    )
    if spec["lib"] == "litdata":
        import litdata
        from litdata.streaming import downloader
        from litdata.streaming.resolver import Dir

        # LitData's obstore prefetch path hung here once a worker had more than one chunk
        # (every chunk downloaded, no batch ever yielded): use its boto3 path.
        downloader._OBSTORE_AVAILABLE = False

        ds = litdata.StreamingDataset(
            Dir(path=spec["local"], url=remote),
            storage_options={"endpoint_url": spec["endpoint"]},
            shuffle=spec.get("shuffle", False),
        )
        return litdata.StreamingDataLoader(
            ds, batch_size=BATCH, num_workers=WORKERS, **_collate(spec)
        )
    if spec["lib"] == "webdataset":
        base = f"{spec['endpoint']}/{BUCKET}/wds-{spec['workload']}"
        urls = [f"{base}/{name}" for name in spec["wds_shards"]]
        return wds_peer.loader(urls, spec["workload"], BATCH, WORKERS, **_collate(spec))
    if spec["lib"] in IN_PLACE_LIBS:
        return in_place_loader(spec, BUCKET, BATCH, WORKERS, _collate(spec))
    module: Any
    if spec["lib"] == "streamx-whole":
        os.environ["STREAMX_RANGE_READS"] = "0"
        import streamx as module
    elif spec["lib"] == "streamx-pyssl":
        os.environ["STREAMX_RUST_TLS"] = "0"  # HTTPS through Python's ssl, as before rustls
        import streamx as module
    elif spec["lib"] in ("streamx", "streamx-before"):  # before: another build, by PYTHONPATH
        import streamx as module
    else:
        import streaming as module
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
    ds = module.StreamingDataset(
        remote=remote, local=spec["local"], batch_size=BATCH, shuffle=spec.get("shuffle", False)
    )
    return module.StreamingDataLoader(ds, batch_size=BATCH, num_workers=WORKERS, **_collate(spec))


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock starts, by every library)

    count, workload = spec["count"], spec["workload"]
    pool = blob_pool()
    seen = np.zeros(count, np.int32)
    expected = expected_tokens(count) if workload == "tokens" else {}
    total = 0
    correct = True
    first = None
    watch = CpuWatch(spec["server_pid"])
    start = time.perf_counter()
    for batch in _loader(spec):
        if first is None:
            first = time.perf_counter() - start
        if workload == "tokens" and isinstance(batch, dict):
            tokens = batch["tokens"].numpy()
            total += len(tokens)
            correct &= check_token_columns(tokens, seen, expected)
            continue
        for sample in _samples(batch):
            total += 1
            if workload == "img":
                i = int(sample["label"])
                blob = pool[i % len(pool)]
                data = sample["data"]
                correct &= len(data) == len(blob) and data[-64:] == blob[-64:]
            else:
                tokens = sample["tokens"]
                i = int(tokens[0])
                if i % CHECK_EVERY == 0:
                    want = expected.get(i)
                    correct &= want is not None and bool(np.array_equal(tokens, want))
                else:
                    correct &= len(tokens) == 2048
            if 0 <= i < count:
                seen[i] += 1
            else:
                correct = False
    seconds = time.perf_counter() - start
    correct &= bool((seen == 1).all()) and total == count
    shares = watch.stop()
    return {
        "ttfs": first,
        "seconds": seconds,
        "sps": count / seconds,
        "correct": bool(correct),
        "busy": shares["busy"],
        "server_cpu_s": shares["server_cpu_s"],
    }


def handshakes(entries: list[TlsEntry]) -> dict[str, Any]:
    """An epoch's TLS connections from nginx's log: full and resumed handshakes (a
    connection's first request), requests, and the suites negotiated."""
    first = [e for e in entries if e.requests == 1]
    return {
        "handshakes": len(first),
        "resumed": sum(e.resumed for e in first),
        "requests": len(entries),
        "ciphers": dict(Counter(f"{e.protocol} {e.cipher}" for e in first)),
    }


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    return write(spec) if spec["op"] == "write" else epoch(spec)


def bench(
    root: Path,
    counts: dict[str, int],
    repeat: int,
    libs: tuple[str, ...] = LIBS,
    collate: str = "identity",
    servers: tuple[str, ...] = ("unthrottled", "40m"),
    shuffle: bool = False,
    before: Path | None = None,
) -> list[dict[str, Any]]:
    rows = []
    os.environ.update(S3_BENCH_ENV)
    for name in servers:
        rate, delay_ms, limit_req, https = SERVERS[name]
        tls = None
        if https:
            # A CA made here, trusted through the variables each client reads.
            certs = make_certs(Path(tempfile.mkdtemp(prefix="certs-", dir=root)))
            tls = (certs.chain, certs.key)
            for variable in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
                os.environ[variable] = str(certs.ca)
        with Nginx(
            root, limit_rate=rate, delay_ms=delay_ms, limit_req=limit_req, tls=tls
        ) as server:
            os.environ["S3_ENDPOINT_URL"] = server.endpoint
            for workload, count in counts.items():
                mb = sum(p.stat().st_size for p in (root / BUCKET / f"mds-{workload}").iterdir())
                row: dict[str, Any] = {"server": name, "workload": workload}
                row["curl_mbps"] = curl_limit(server.endpoint, root, workload, root / "curl")
                for lib in libs:
                    best: dict[str, Any] | None = None
                    for _ in range(repeat):
                        local = tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=root)
                        spec = {
                            "op": "epoch",
                            "lib": lib,
                            "workload": workload,
                            "count": count,
                            "local": local,
                            "endpoint": server.endpoint,
                            "collate": collate,
                            "shuffle": shuffle,
                            "wds_shards": sorted(
                                p.name for p in (root / BUCKET / f"wds-{workload}").glob("*.tar")
                            ),
                        }
                        spec["server_pid"] = server.pid
                        logged = len(server.tls_log())
                        try:
                            env = None
                            if lib == "streamx-before":
                                env = {**os.environ, "PYTHONPATH": f"{before}/python"}
                            result = run_worker(SCRIPT, spec, timeout=EPOCH_TIMEOUT_S, env=env)
                        except (RuntimeError, subprocess.TimeoutExpired) as err:
                            # Recorded, not fatal: one library hanging must not hide the rest.
                            print(f"{lib} {workload} {name}: failed: {str(err)[-300:]}")
                            result = {"sps": 0.0, "ttfs": None, "correct": False}
                        if https:
                            result.update(handshakes(server.tls_log()[logged:]))
                        shutil.rmtree(local, ignore_errors=True)
                        if best is None or result["sps"] > best["sps"]:
                            best = result
                    assert best is not None
                    key = lib.replace("-", "_")
                    row[f"{key}_sps"] = best["sps"]
                    row[f"{key}_ttfs"] = best["ttfs"]
                    row[f"{key}_correct"] = best["correct"]
                    row[f"{key}_busy"] = best.get("busy")
                    row[f"{key}_server_cpu_s"] = best.get("server_cpu_s")
                    for field in ("handshakes", "resumed", "requests"):
                        row[f"{key}_{field}"] = best.get(field)
                    print(lib, workload, name, best, flush=True)
                row["streamx_mbps"] = row["streamx_sps"] * mb / count / 1e6
                for peer in PEERS:  # no ratio against a run that failed
                    theirs = row.get(f"{peer}_sps")
                    row[f"vs_{peer}"] = row["streamx_sps"] / theirs if theirs else None
                row["of_curl"] = row["streamx_mbps"] / row["curl_mbps"]
                for ours in ("wds", "wds_index", "lit"):  # the same ratios, streamx in place
                    if row.get(f"streamx_{ours}_sps"):
                        for peer in PEERS:
                            theirs = row.get(f"{peer}_sps")
                            mine = row[f"streamx_{ours}_sps"]
                            row[f"{ours}_vs_{peer}"] = mine / theirs if theirs else None
                row["correct"] = all(row[f"{lib.replace('-', '_')}_correct"] for lib in libs)
                rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    if worker_main(argv, dispatch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--img", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", choices=["img", "tokens"])
    parser.add_argument("--quick", action="store_true", help="600 img and 6,000 tokens samples")
    parser.add_argument(
        "--collate",
        choices=["identity", "default"],
        default="identity",
        help="identity collate_fn (lists of samples), or torch's default collation",
    )
    parser.add_argument(
        "--libs",
        nargs="+",
        choices=[*LIBS, "streamx-whole", "streamx-pyssl", "streamx-before", *IN_PLACE_LIBS],
        help="only these (the ratio columns need litdata and streaming)",
    )
    parser.add_argument(
        "--servers",
        nargs="+",
        choices=list(SERVERS),
        default=["unthrottled", "40m"],
        help="nginx unthrottled, 40 MiB/s per connection, 10 ms per request at 1 Gbit/s; "
        "https*: the same over TLS (a CA made by the bench), https-40m-503: limit_req 503s",
    )
    parser.add_argument(
        "--whole-too", action="store_true", help="also streamx with range reads off"
    )
    parser.add_argument(
        "--wds-too", action="store_true", help="also streamx reading WebDataset's tars in place"
    )
    parser.add_argument(
        "--lit-too", action="store_true", help="also streamx reading LitData's chunks in place"
    )
    parser.add_argument(
        "--shuffle",
        action="store_true",
        help="shuffled epochs (streamx, mosaic and LitData with shuffle=True; not WebDataset)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="streamx-before (in --libs) runs the build in DIR/python, alternated with ours",
    )
    args = parser.parse_args(argv)
    if args.libs and "streamx-before" in args.libs and args.before is None:
        parser.error("--libs streamx-before needs --before DIR")
    counts = {"img": args.img, "tokens": args.tokens}
    if args.quick:
        counts = {"img": 600, "tokens": 6_000}
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        print("bench_objstore: skipped, nginx is not installed (apt-get install -y nginx)")
        return 0
    if args.only:
        counts = {args.only: counts[args.only]}
    root = Path(tempfile.mkdtemp(prefix="streamx-objstore-"))
    try:
        for workload, count in counts.items():
            for lib, name in (("streamx", "mds"), ("litdata", "litdata"), ("webdataset", "wds")):
                out = str(root / BUCKET / f"{name}-{workload}")
                spec = {"op": "write", "lib": lib, "workload": workload, "count": count, "out": out}
                run_worker(SCRIPT, spec, timeout=3600)
        libs: tuple[str, ...] = (*LIBS, "streamx-whole") if args.whole_too else LIBS
        libs = (*libs, "streamx-wds", "streamx-wds-index") if args.wds_too else libs
        libs = (*libs, "streamx-lit") if args.lit_too else libs
        if args.libs:
            libs = tuple(args.libs)
        if args.shuffle:  # WebDataset's shuffle is a buffer over streamed shards: not comparable
            libs = tuple(lib for lib in libs if lib != "webdataset")
        rows = bench(
            root,
            counts,
            args.repeat,
            libs,
            args.collate,
            tuple(args.servers),
            args.shuffle,
            args.before,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    columns = COLUMNS + WHOLE_COLUMNS if args.whole_too else COLUMNS
    columns = columns + CPU_COLUMNS
    if "streamx-pyssl" in libs:
        columns = columns + PYSSL_COLUMNS
    if "streamx-wds" in libs or "streamx-wds-index" in libs:
        columns = columns + WDS_COLUMNS
    if "streamx-lit" in libs:
        columns = columns + LIT_COLUMNS
    table = format_table(rows, columns)
    print(table)
    path = write_results(
        "objstore",
        {
            "machine": machine(),
            "counts": counts,
            "repeat": args.repeat,
            "collate": args.collate,
            "servers": args.servers,
            "rows": rows,
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
