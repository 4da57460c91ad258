"""The py1e count cache's lock: processes that start the same epoch together (DataLoader
workers, the ranks of a node) count its draws once; the others wait, then read the file. Each
process reports what it did with the cache (``count_cache_stats``: nodes read, nodes
written), so the test counts the writers rather than timing anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from plan_configs import plan_config

# 10^8 samples in one canonical node: a count long enough for the three to overlap.
SIZES = [250_000] * 400

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


def test_workers_starting_an_epoch_together_count_it_once(tmp_path: Path) -> None:
    config = plan_config(SIZES, num_canonical_nodes=1, world=(1, 1, 3), shuffle_block_size=1 << 18)
    cache = tmp_path / "counts"
    cache.mkdir(mode=0o700)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, json.dumps([config, str(cache), worker])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(3)
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
    stats = sorted(tuple(r["stats"]) for r in results)
    # One wrote the node; the two others read it and wrote nothing.
    assert stats == [(0, 1, None), (1, 0, None), (1, 0, None)], stats
    assert len({tuple(r["first"]) for r in results}) == 3  # three workers' own shares
    (name,) = os.listdir(cache)  # the draws; no lock file is left
    assert name.startswith("py1e-draws-") and name.endswith(".bin"), name
