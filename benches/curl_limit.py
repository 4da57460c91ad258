"""What the loopback carries: ``curl`` fetching a workload's MDS shards, for the benches'
"of curl" column."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

BUCKET = "bucket"


# (processes, transfers each): one curl process runs its transfers on one thread, which
# tops out near 1 GB/s on a 2-vCPU machine, so one process per core is measured too.
CURL_LAYOUTS = ((1, 8), (2, 4))


def curl_limit(endpoint: str, root: Path, workload: str, scratch: Path, runs: int = 3) -> float:
    """MB/s of curl fetching the workload's MDS shards into files, 8 transfers at once, as
    one process or two: the best layout's best of ``runs`` (the first run after writing
    the dataset can find its files out of the page cache, which measures the disk, not the
    loopback)."""
    names = sorted(p.name for p in (root / BUCKET / f"mds-{workload}").iterdir())
    best = 0.0
    for processes, transfers in CURL_LAYOUTS:
        commands = []
        for group in range(processes):
            # --retry: a throttling server's 503s are waited out (Retry-After), as a client would.
            args = ["curl", "-s", "--fail", "--retry", "30", "--parallel", "--parallel-max"]
            args.append(str(transfers))
            for name in names[group::processes]:
                args += ["-o", str(scratch / name), f"{endpoint}/{BUCKET}/mds-{workload}/{name}"]
            commands.append(args)
        for _ in range(runs):
            scratch.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            running = [subprocess.Popen(a, stderr=subprocess.DEVNULL) for a in commands]
            failed = [p.args for p in running if p.wait() != 0]
            seconds = time.perf_counter() - start
            if failed:
                raise RuntimeError(f"curl failed: {failed[0]!r}")
            total = sum(p.stat().st_size for p in scratch.iterdir())
            shutil.rmtree(scratch)
            best = max(best, total / seconds / 1e6)
    return best
