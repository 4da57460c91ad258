"""One thread, whole GETs of a 256 MiB file from nginx over HTTPS: Rust TLS (rustls) vs
Python ssl (STREAMX_RUST_TLS=0), alternated, 3 runs each.

Usage: python benches/bench_https_get.py [--quick]  (--quick: a 16 MiB file, one run each)
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import Nginx

from streamx.storage import http_pool
from streamx.storage.http_get import PlainHttp, get_into

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a 16 MiB file, one run each")
quick = parser.parse_args().quick
d = Path(tempfile.mkdtemp(prefix="a1get-"))
(d / "root").mkdir()
size = (16 if quick else 256) << 20
(d / "root" / "obj.bin").write_bytes(os.urandom(size))
certs = make_certs(d)
os.environ["AWS_CA_BUNDLE"] = str(certs.ca)
res = {}
# The 256 MiB file and its copy go once measured (the temporary directory is not kept).
try:
    with Nginx(d / "root", tls=(certs.chain, certs.key)) as nginx:
        t = PlainHttp("x", "https", "127.0.0.1", nginx.port, "/obj.bin")
        for label, flag in [("python-ssl", "0"), ("rustls", "1")] * (1 if quick else 3):
            os.environ["STREAMX_RUST_TLS"] = flag
            http_pool._close_all()
            fd = os.open(d / "out", os.O_RDWR | os.O_CREAT | os.O_TRUNC)
            start = time.perf_counter()
            c0 = time.process_time()
            get_into(t, fd, 0, None, timeout=30, deadline=time.monotonic() + 120)
            wall = time.perf_counter() - start
            cpu = time.process_time() - c0
            os.close(fd)
            res.setdefault(label, []).append((size / wall / 1e6, cpu))
finally:
    shutil.rmtree(d, ignore_errors=True)
for label, runs in res.items():
    best = max(runs)
    rates = [round(r[0]) for r in runs]
    cpus = [round(r[1], 2) for r in runs]
    print(f"{label}: best {best[0]:.0f} MB/s, runs {rates} MB/s, CPU s {cpus}")
