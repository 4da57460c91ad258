"""Two streamx trees, before and after, alternating epoch by epoch on ``bench_objstore.py``'s
servers and datasets (plus LitData), with each epoch's requests and 503 answers counted from
nginx's log, and each workload's share of the unthrottled rate on the 503 server.

``bench_objstore.py --before`` runs the trees one after the other per server; this driver
alternates them within each round (the order flips every round), which is what a shared,
noisy machine needs for a before/after under throttling::

    PYTHONPATH=python .venv/bin/python benches/objstore_ab.py BEFORE/python python \\
        --rounds 3 --servers https-40m https-40m-503
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_objstore as bo
from common import S3_BENCH_ENV, compile_streamx, run_worker, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import Nginx

Key = tuple[str, str, str]  # server, workload, reader


def _write(root: Path, counts: dict[str, int]) -> None:
    """The datasets, written once per size under ``root`` and linked where the epochs look."""
    for workload, count in counts.items():
        for lib, name in (("streamx", "mds"), ("litdata", "litdata")):
            out = root / bo.BUCKET / f"{name}-{workload}-{count}"
            if not out.exists():
                spec = {"op": "write", "lib": lib, "workload": workload, "count": count}
                run_worker(bo.SCRIPT, {**spec, "out": str(out)}, timeout=3600)
            link = root / bo.BUCKET / f"{name}-{workload}"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(out.name)


def _epoch(server: Nginx, root: Path, spec: dict[str, Any], tree: str) -> dict[str, Any]:
    local = tempfile.mkdtemp(prefix="cache-", dir=root)
    seen = len(server.log())
    try:
        env = dict(os.environ, PYTHONPATH=tree)
        result = run_worker(bo.SCRIPT, {**spec, "local": local}, timeout=600, env=env)
    except Exception as err:  # a failed epoch is a result here, not the end of the run
        result = {"sps": 0.0, "ttfs": None, "correct": False, "error": str(err)[-500:]}
    finally:
        shutil.rmtree(local, ignore_errors=True)
    log = server.log()[seen:]
    result["requests"] = len(log)
    result["refused"] = sum(e.status == 503 for e in log)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before", help="the before tree's python directory")
    parser.add_argument("after", help="the after tree's python directory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--img", type=int, default=10_000, help="img samples")
    parser.add_argument("--tokens", type=int, default=100_000, help="tokens samples")
    parser.add_argument("--servers", nargs="+", default=["https-40m", "https-40m-503"])
    parser.add_argument("--no-litdata", action="store_true")
    args = parser.parse_args()
    counts = {"img": args.img, "tokens": args.tokens}
    readers = [("before", "streamx", args.before), ("after", "streamx", args.after)]
    if not args.no_litdata:
        readers.append(("litdata", "litdata", args.after))
    root = Path(tempfile.mkdtemp(prefix="streamx-objstore-ab-"))
    results: dict[Key, list[dict[str, Any]]] = {}
    try:
        _write(root, counts)
        os.environ.update(S3_BENCH_ENV)
        for tree in (args.before, args.after):
            compile_streamx({"PYTHONPATH": tree})
        for name in args.servers:
            rate, delay_ms, limit_req, https = bo.SERVERS[name]
            certs = make_certs(Path(tempfile.mkdtemp(prefix="certs-", dir=root)))
            for variable in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
                os.environ[variable] = str(certs.ca)
            tls = (certs.chain, certs.key) if https else None
            with Nginx(
                root, limit_rate=rate, delay_ms=delay_ms, limit_req=limit_req, tls=tls
            ) as server:
                os.environ["S3_ENDPOINT_URL"] = server.endpoint
                for workload, count in counts.items():
                    spec = {"op": "epoch", "workload": workload, "count": count}
                    spec |= {"endpoint": server.endpoint, "collate": "identity"}
                    spec |= {"shuffle": False, "wds_shards": [], "server_pid": server.pid}
                    for round_ in range(args.rounds):
                        for label, lib, tree in readers[:: 1 if round_ % 2 == 0 else -1]:
                            got = _epoch(server, root, {**spec, "lib": lib}, tree)
                            got["load"] = round(os.getloadavg()[0], 1)
                            results.setdefault((name, workload, label), []).append(got)
                            print(f"{time.strftime('%H:%M:%S')} {name} {workload} {label}: {got}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("load average", os.getloadavg())
    for (name, workload, label), runs in results.items():
        _summary(results, (name, workload, label), runs)
    write_results("objstore_ab", {"|".join(key): runs for key, runs in results.items()})


def _summary(
    results: dict[Key, list[dict[str, Any]]], key: Key, runs: list[dict[str, Any]]
) -> None:
    """One reader's line: rates, first batches, requests, 503s, load; its share of the
    unthrottled rate on a 503 server and its ratio to LitData's rate."""
    name, workload, label = key
    rates = [r["sps"] for r in runs]
    firsts = [r["ttfs"] for r in runs if r.get("ttfs") is not None]
    first = f"{min(firsts):.2f}-{max(firsts):.2f} s" if firsts else "-"
    print(
        f"{name} {workload} {label}: samples/s {min(rates):.0f}-{max(rates):.0f} "
        f"(median {statistics.median(rates):.0f}), first batch {first}, "
        f"requests {[r['requests'] for r in runs]}, 503s {[r['refused'] for r in runs]}, "
        f"load {[r.get('load') for r in runs]}, correct {all(r['correct'] for r in runs)}"
    )
    calm = results.get((name.removesuffix("-503"), workload, label))
    if name.endswith("-503") and calm:
        share = statistics.median(rates) / statistics.median(r["sps"] for r in calm)
        print(f"  share of the unthrottled rate: {share:.2f}")
    litdata = results.get((name, workload, "litdata"))
    if label != "litdata" and litdata:
        ratio = statistics.median(rates) / statistics.median(r["sps"] for r in litdata)
        print(f"  ratio to LitData (medians): {ratio:.2f}x")


if __name__ == "__main__":
    main()
