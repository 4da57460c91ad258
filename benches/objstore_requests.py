"""Requests one cold epoch sends, counted from nginx's own log: ``bench_objstore.py``'s
dataset and servers, one library at a time, HTTPS at 40 MB/s per connection, with or without
``limit_req`` (``--limit-req 40r/s``: the ``https-40m-503`` server).

Prints the epoch's result, then every request nginx logged by kind: 503s, HEADs, whole GETs,
and ranged GETs by size (range reads are under 1 MiB); ``--per-file``, each file's too.
Usage: ``python benches/objstore_requests.py
[--workload img|tokens] [--lib streamx|litdata] [--limit-req 40r/s|none]
[--limit-rate 40m|none] [--root DIR]`` (``--limit-rate none``: HTTPS unthrottled);
``--root`` keeps the written datasets between runs.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import bench_objstore as bo
from common import S3_BENCH_ENV

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import LogEntry, Nginx

COUNTS = {"img": 10_000, "tokens": 100_000}
MIB = 1 << 20


def _kind(entry: LogEntry) -> str:
    if entry.status == 503:
        return "503"
    if entry.method != "GET":
        return entry.method
    if not entry.range or entry.range == "-":
        return "whole"
    mib = entry.sent / MIB
    for bound, name in ((1, "<1 MiB"), (3, "1-3 MiB"), (6, "3-6 MiB"), (12, "6-12 MiB")):
        if mib < bound:
            return name
    return ">=12 MiB"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=sorted(COUNTS), default="img")
    parser.add_argument("--lib", choices=["streamx", "litdata"], default="streamx")
    parser.add_argument("--limit-req", default="40r/s", help="nginx limit_req rate, or none")
    parser.add_argument(
        "--limit-rate", default="40m", help="nginx limit_rate per connection, or none"
    )
    parser.add_argument("--root", help="where the datasets are written (kept)")
    parser.add_argument(
        "--per-file", action="store_true", help="also each file's requests by kind, in order"
    )
    parser.add_argument(
        "--trace", metavar="FILE", help="also every request of the file named FILE, in order"
    )
    args = parser.parse_args(argv)
    root = Path(args.root or tempfile.mkdtemp(prefix="streamx-requests-"))
    try:
        return _count(args, root)
    finally:
        if not args.root:
            shutil.rmtree(root, ignore_errors=True)


def _count(args: argparse.Namespace, root: Path) -> int:
    count = COUNTS[args.workload]
    folder = "litdata" if args.lib == "litdata" else "mds"
    out = root / bo.BUCKET / f"{folder}-{args.workload}"
    if not out.exists():
        spec = {"op": "write", "lib": args.lib, "workload": args.workload, "count": count}
        bo.run_worker(bo.SCRIPT, {**spec, "out": str(out)}, timeout=3600)
    os.environ.update(S3_BENCH_ENV)
    certs = make_certs(Path(tempfile.mkdtemp(prefix="certs-", dir=root)))
    for variable in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
        os.environ[variable] = str(certs.ca)
    limit_req = None if args.limit_req == "none" else args.limit_req
    tls = (certs.chain, certs.key)
    limit_rate = None if args.limit_rate == "none" else args.limit_rate
    with Nginx(root, limit_rate=limit_rate, limit_req=limit_req, tls=tls) as server:
        os.environ["S3_ENDPOINT_URL"] = server.endpoint
        spec = {"op": "epoch", "lib": args.lib, "workload": args.workload, "count": count}
        local = tempfile.mkdtemp(prefix="cache-", dir=root)
        spec.update(local=local, endpoint=server.endpoint)
        spec.update(collate="identity", shuffle=False, wds_shards=[], server_pid=server.pid)
        try:
            print(bo.run_worker(bo.SCRIPT, spec, timeout=bo.EPOCH_TIMEOUT_S))
        finally:
            shutil.rmtree(local, ignore_errors=True)  # a GB a run, even under --root
        time.sleep(1)  # nginx writes a line as its request ends
        log = server.log()
    kinds = collections.Counter(_kind(entry) for entry in log)
    gb = sum(entry.sent for entry in log) / 1e9
    print(f"{len(log)} requests for {gb:.2f} GB: {dict(sorted(kinds.items()))}")
    print(f"{len(log) / gb:.0f} requests per GB")
    if args.per_file:
        files: dict[str, list[LogEntry]] = collections.defaultdict(list)
        for entry in sorted(log, key=lambda entry: entry.start):
            files[entry.uri.rsplit("/", 1)[-1]].append(entry)
        began = min(entry.start for entry in log)
        for name, entries in files.items():
            kinds = collections.Counter(_kind(entry) for entry in entries)
            at = entries[0].start - began
            print(f"  {name} from {at:.2f}s: {len(entries)} {dict(sorted(kinds.items()))}")
    if args.trace:
        _trace(log, args.trace)
    return 0


def _trace(log: list[LogEntry], name: str) -> None:
    """Each request of the file ``name``: when it began and ended (from the epoch's first
    request), its range and the bytes sent."""
    began = min(entry.start for entry in log)
    for entry in sorted(log, key=lambda entry: entry.start):
        if entry.uri.rsplit("/", 1)[-1] == name:
            span = f"{entry.start - began:6.3f}-{entry.end - began:6.3f}s"
            print(f"  {span} conn {entry.connection:4d} {entry.range:>24} {entry.sent:>9}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
