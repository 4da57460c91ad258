"""Helpers of the packing tests: run ``packed_rank.py`` as ``world`` real rank processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

RANK_SCRIPT = Path(__file__).with_name("packed_rank.py")


def run_ranks(
    local: Path,
    world: int,
    config: dict[str, Any],
    tmp: Path,
    state: Path | None,
    script: Path = RANK_SCRIPT,
) -> list[dict[str, Any]]:
    """Each rank's ``{"sequences": [...], "state": {...}}``, rank order (``script`` writes
    them: ``packed_rank.py``'s arguments, another rank script's output)."""
    port = 29_500 + os.getpid() % 1000 + world
    procs, outs = [], []
    for rank in range(world):
        out = tmp / f"w{world}-r{rank}-{state is not None}.json"
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        args = [sys.executable, str(script), str(local), str(out), json.dumps(config)]
        if state is not None:
            args.append(str(state))
        procs.append(subprocess.Popen(args, env=env))
        outs.append(out)
    for p in procs:
        assert p.wait(timeout=120) == 0
    return [json.loads(o.read_text()) for o in outs]


def tuples(results: list[dict[str, Any]]) -> Counter[tuple[int, ...]]:
    """The multiset of the sequences all ranks got."""
    return Counter(tuple(s) for r in results for s in r["sequences"])
