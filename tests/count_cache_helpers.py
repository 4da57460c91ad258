"""What the count-cache tests share: a private cache directory, a worker's share planned in
pieces over it, and workers of one node planning the same epoch at the same moment, each in
a process of its own (they start together, and each reports its count cache's stats and
first ids)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.order.settings import PlanConfig

__all__ = ["plan_in_pieces", "private_dir", "race"]


def private_dir(path: Path) -> Path:
    """``path`` made as a directory only its owner may use (the count cache refuses others)."""
    path.mkdir(mode=0o700, parents=True)
    path.chmod(0o700)
    return path


def plan_in_pieces(
    config: PlanConfig, index: tuple[int, int, int], cache: Path | None, size: int = 13
) -> tuple[NDArray[np.int64], tuple[int, int, str | None] | None]:
    """The worker's whole share in pieces of ``size`` over ``cache`` (every count worth
    writing), and what the plan did with the cache."""
    pieces, _ = _core.plan_worker_pieces(
        config, *index, count_cache_dir=cache, count_cache_min_samples=0
    )
    out = []
    while len(ids := pieces.next_piece(size)):
        out.append(ids)
    return np.concatenate(out), pieces.count_cache_stats


_RACER = textwrap.dedent(
    """
    import json, sys
    from streamx import _core
    config, cache, worker = json.loads(sys.argv[1])
    config["streams"] = [tuple(s) for s in config["streams"]]
    config["world"] = tuple(config["world"])
    print("ready", flush=True)
    sys.stdin.readline()  # the test starts every racer at once
    pieces, _ = _core.plan_worker_pieces(
        config, 0, 0, worker, count_cache_dir=cache, count_cache_min_samples=0
    )
    first = pieces.next_piece(5)
    print(json.dumps({"stats": pieces.count_cache_stats, "first": first.tolist()}), flush=True)
    """
)


def race(config: PlanConfig, cache: Path, workers: int) -> list[dict[str, Any]]:
    """Each worker's ``{"stats": ..., "first": [...]}``, the workers released together once
    every one is ready."""
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, json.dumps([config, str(cache), worker])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(workers)
    ]
    for racer in racers:
        assert racer.stdout is not None
        assert racer.stdout.readline() == "ready\n"
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=300)
        assert racer.returncode == 0, err[-3000:]
        results.append(json.loads(out))
    return results
