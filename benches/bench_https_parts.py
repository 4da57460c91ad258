"""One 64 MiB shard fetched in parallel 2 MiB parts by ``download_file``, from nginx capped
at 40 MB/s per connection, over plain HTTP and over HTTPS (a CA made here), against 16
parallel ranged ``curl`` GETs of the same object in the same run. Also reports the CPU
seconds of this process and of nginx's workers, which share this machine's cores.

Usage: python benches/bench_https_parts.py [--runs 3] [--quick]  (--quick: one run each)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from https_certs import make_certs
from nginx_server import Nginx

from streamx.storage.download import download_file

SIZE = 64 << 20


def nginx_cpu_s() -> float:
    """CPU seconds used so far by every nginx process on this machine."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != "nginx":
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def curl_mbps(url: str, ca: Path, streams: int = 16) -> float:
    part = SIZE // streams
    began = time.perf_counter()
    running = [
        subprocess.Popen(
            [
                "curl",
                "-sf",
                "--cacert",
                str(ca),
                "-r",
                f"{k * part}-{(k + 1) * part - 1}",
                "-o",
                "/dev/null",
                url,
            ]
        )
        for k in range(streams)
    ]
    if any(p.wait() != 0 for p in running):
        raise RuntimeError(f"curl failed on {url}")
    return SIZE / (time.perf_counter() - began) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run each: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    root = Path(tempfile.mkdtemp(prefix="streamx-https-parts-"))
    try:
        (root / "b").mkdir()
        (root / "b" / "f").write_bytes(os.urandom(SIZE))
        certs = make_certs(root)
        os.environ["AWS_CA_BUNDLE"] = str(certs.ca)
        print("| server | streamx MB/s (runs) | curl x16 MB/s | streamx ÷ curl ", end="")
        print("| our CPU s | nginx CPU s |")
        print("|---|---|---|---|---|---|")
        for name, tls in (("40m", None), ("https-40m", (certs.chain, certs.key))):
            with Nginx(root, limit_rate="40m", tls=tls) as server:
                url = f"{server.scheme}://127.0.0.1:{server.port}/b/f"
                rates, ours, theirs = [], 0.0, 0.0
                for i in range(args.runs):
                    out = root / f"out{i}"
                    n0, c0, t0 = nginx_cpu_s(), time.process_time(), time.perf_counter()
                    download_file(url, str(out), expected_size=SIZE)
                    rates.append(SIZE / (time.perf_counter() - t0) / 1e6)
                    ours += time.process_time() - c0
                    theirs += nginx_cpu_s() - n0
                    out.unlink()
                curl = max(curl_mbps(url, certs.ca) for _ in range(args.runs))
                best = max(rates)
                runs = ", ".join(f"{r:.0f}" for r in rates)
                print(
                    f"| {name} | {best:.0f} ({runs}) | {curl:.0f} | {best / curl:.2f} "
                    f"| {ours / args.runs:.2f} | {theirs / args.runs:.2f} |"
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
