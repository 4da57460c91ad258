"""Client CPU per GiB over HTTPS and plain HTTP: one thread, whole GETs of a 256 MiB file
from nginx (unthrottled), each in a fresh process so that two builds of streamx can be
alternated (``--before DIR``: a tree whose ``python/`` holds the other build). Prints, per
build and scheme, the best of ``--runs`` runs: MB/s, client CPU s per GiB and nginx CPU s
per GiB, and the TLS suite nginx logged.

Usage: python benches/bench_https_cpu.py [--before DIR] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "storage"))
from https_certs import make_certs  # noqa: E402
from nginx_server import Nginx  # noqa: E402

SIZE = 256 << 20
GETS = 4


def child(endpoint: str, path: str) -> None:
    """Runs in the measured process: GETS whole GETs into a file, then prints the figures."""
    from urllib.parse import urlsplit

    from streamx.storage.http_get import PlainHttp, get_into

    url = urlsplit(endpoint)
    target = PlainHttp("x", url.scheme, url.hostname or "", url.port, "/obj.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    start = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(GETS):
        get_into(target, fd, 0, None, timeout=60, deadline=time.monotonic() + 120)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    seconds = time.perf_counter() - start
    os.close(fd)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(json.dumps({"seconds": seconds, "cpu": cpu}))


def nginx_cpu(pid: int) -> float:
    """CPU seconds of nginx's workers (children of the master) so far."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for kid in (task / "children").read_text().split():
            fields = Path(f"/proc/{kid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="a tree with the other build in python/")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="https-cpu-"))
    try:
        (work / "root").mkdir()
        (work / "root" / "obj.bin").write_bytes(os.urandom(SIZE))
        certs = make_certs(work)
        builds = {"after": HERE.parent / "python"}
        if args.before:
            builds = {"before": args.before / "python", **builds}
        gib = SIZE * GETS / (1 << 30)
        best: dict[tuple[str, str], dict[str, float]] = {}
        suites: dict[str, set[str]] = {}
        for scheme in ("http", "https"):
            tls = (certs.chain, certs.key) if scheme == "https" else None
            with Nginx(work / "root", tls=tls) as nginx:
                for _ in range(args.runs):
                    for name, python in builds.items():
                        env = {**os.environ, "PYTHONPATH": str(python)}
                        env["SSL_CERT_FILE"] = str(certs.ca)
                        before = nginx_cpu(nginx.pid)
                        seen = len(nginx.tls_log())
                        out = subprocess.run(
                            [
                                sys.executable,
                                __file__,
                                "--child",
                                nginx.endpoint,
                                str(work / "out.bin"),
                            ],
                            env=env,
                            check=True,
                            capture_output=True,
                            text=True,
                        ).stdout
                        got = json.loads(out.splitlines()[-1])
                        server = nginx_cpu(nginx.pid) - before
                        suites.setdefault(name, set()).update(
                            e.cipher for e in nginx.tls_log()[seen:] if e.requests == 1
                        )
                        row = {
                            "mbps": SIZE * GETS / got["seconds"] / 1e6,
                            "cpu_per_gib": got["cpu"] / gib,
                            "nginx_per_gib": server / gib,
                        }
                        key = (name, scheme)
                        if key not in best or row["cpu_per_gib"] < best[key]["cpu_per_gib"]:
                            best[key] = row
                        print(name, scheme, {k: round(v, 3) for k, v in row.items()}, flush=True)
        print("best (lowest client CPU):")
        for (name, scheme), row in best.items():
            print(f"  {name:6} {scheme:5} " + " ".join(f"{k} {v:.3f}" for k, v in row.items()))
        print("suites:", {name: sorted(found) for name, found in suites.items()})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())
