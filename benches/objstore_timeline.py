"""One cold epoch on ``bench_objstore.py``'s dataset and 503 server, as a timeline: every
request nginx logged (its start in ms from the epoch's first request, status, bytes, time
taken, connection, file and range), merged with streamx's pace decisions (its
``streamx.storage.request_pace`` debug lines, each stamped with the wall clock and pid).

Usage: ``PYTHONPATH=python python benches/objstore_timeline.py [--workload img|tokens]
[--limit-req 40r/s|none] [--root DIR] [--tree PYTHON_DIR]``. Prints the epoch's result, the
timeline, then a summary: requests and 503s per half second, and the gaps with nothing
started.
"""

from __future__ import annotations

import argparse
import collections
import itertools
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
# Loaded by every interpreter of the epoch (the worker and its DataLoader workers): the
# pace's decisions go to one file, stamped with the wall clock that nginx's log uses.
_SITE = """
import logging, os, time
_path = os.environ.get("STREAMX_TIMELINE_LOG")
if _path:
    class _Wall(logging.Formatter):
        def format(self, record):
            return f"{record.created:.3f} {os.getpid()} {record.getMessage()}"
    _handler = logging.FileHandler(_path)
    _handler.setFormatter(_Wall())
    for _name in ("streamx.storage.request_pace", "streamx.storage.throttle"):
        _log = logging.getLogger(_name)
        _log.setLevel(logging.DEBUG)
        _log.addHandler(_handler)
"""
_GAP_S = 0.15


def _pace_lines(path: Path) -> list[tuple[float, str]]:
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        when, rest = line.split(" ", 1)
        lines.append((float(when), rest))
    return lines


def _describe(entry: LogEntry) -> str:
    name = entry.uri.rsplit("/", 1)[-1]
    rng = "" if entry.range in ("", "-") else f" {entry.range.removeprefix('bytes=')}"
    took = entry.end - entry.start
    return (
        f"{entry.status} {entry.sent / 2**20:7.2f} MiB {took * 1000:6.0f} ms "
        f"c{entry.connection} {entry.method} {name}{rng}"
    )


def _print(log: list[LogEntry], pace: list[tuple[float, str]]) -> None:
    began = min(e.start for e in log)
    rows = [(e.start, _describe(e)) for e in log] + [(t, f"PACE {m}") for t, m in pace]
    for when, text in sorted(rows):
        print(f"{(when - began) * 1000:8.0f} ms  {text}")
    halves: collections.Counter[int] = collections.Counter()
    refused: collections.Counter[int] = collections.Counter()
    for e in log:
        halves[int((e.start - began) * 2)] += 1
        refused[int((e.start - began) * 2)] += e.status == 503
    print(
        "per 0.5 s (requests/503s):", [f"{h / 2}:{halves[h]}/{refused[h]}" for h in sorted(halves)]
    )
    starts = sorted(e.start for e in log)
    gaps = [(a - began, b - a) for a, b in itertools.pairwise(starts) if b - a > _GAP_S]
    print("gaps without a start:", [f"at {a:.2f}s {g:.2f}s" for a, g in gaps])
    ends = max(e.end for e in log)
    print(
        f"first request to last answer: {ends - began:.2f} s, {len(log)} requests, "
        f"{sum(e.status == 503 for e in log)} 503s, {sum(e.sent for e in log) / 1e9:.2f} GB"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=sorted(COUNTS), default="img")
    parser.add_argument("--limit-req", default="40r/s", help="nginx limit_req rate, or none")
    parser.add_argument("--root", help="where the datasets are written (kept)")
    parser.add_argument("--tree", help="the streamx tree's python directory (default: this one)")
    args = parser.parse_args(argv)
    root = Path(args.root or tempfile.mkdtemp(prefix="streamx-timeline-"))
    try:
        return _run(args, root)
    finally:
        if not args.root:
            shutil.rmtree(root, ignore_errors=True)


def _run(args: argparse.Namespace, root: Path) -> int:
    count = COUNTS[args.workload]
    out = root / bo.BUCKET / f"mds-{args.workload}"
    if not out.exists():
        spec = {"op": "write", "lib": "streamx", "workload": args.workload, "count": count}
        bo.run_worker(bo.SCRIPT, {**spec, "out": str(out)}, timeout=3600)
    work = Path(tempfile.mkdtemp(prefix="timeline-", dir=root))
    (work / "sitecustomize.py").write_text(_SITE)
    pace_log = work / "pace.log"
    (work / "certs").mkdir()
    certs = make_certs(work / "certs")
    tree = args.tree or os.environ.get("PYTHONPATH", "python")
    env = dict(os.environ, **S3_BENCH_ENV, PYTHONPATH=f"{work}{os.pathsep}{tree}")
    env["STREAMX_TIMELINE_LOG"] = str(pace_log)
    for variable in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
        env[variable] = str(certs.ca)
    limit_req = None if args.limit_req == "none" else args.limit_req
    with Nginx(root, limit_rate="40m", limit_req=limit_req, tls=(certs.chain, certs.key)) as nx:
        env["S3_ENDPOINT_URL"] = nx.endpoint
        spec = {"op": "epoch", "lib": "streamx", "workload": args.workload, "count": count}
        spec.update(local=str(work / "cache"), endpoint=nx.endpoint, server_pid=nx.pid)
        spec.update(collate="identity", shuffle=False, wds_shards=[])
        print(bo.run_worker(bo.SCRIPT, spec, timeout=bo.EPOCH_TIMEOUT_S, env=env))
        time.sleep(1)  # nginx writes a line as its request ends
        log = nx.log()
    _print(log, _pace_lines(pace_log))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
