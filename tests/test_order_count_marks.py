"""The count cache of py1s, py2s and py1br (issue 24): a worker's pieces read with what
other workers counted equal ``plan_worker``'s ids, in this process and in a new one; every
file is the algorithm's own."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from count_cache_helpers import plan_in_pieces, private_dir, race
from plan_configs import plan_config
from streamx import _core

SIZES = [37, 120, 0, 88, 400, 5, 61, 230, 17, 150]
ALGOS = ["py1s", "py2s", "py1br"]
CONFIGS: list[dict[str, Any]] = [
    {},
    {"shuffle_block_size": 50, "num_canonical_nodes": 1},
    {"num_canonical_nodes": 8, "world": (4, 2, 1), "partition_algo": "orig"},
    {"sample_in_epoch": 301, "batch_size": 3},
    {"streams": [(SIZES, 1700, 1.5)], "epoch": 4},
]


@pytest.mark.parametrize(("algo", "changes"), itertools.product(ALGOS, CONFIGS))
def test_pieces_with_the_cache_equal_the_whole_worker_plan(
    algo: str, changes: dict[str, Any], tmp_path: Path
) -> None:
    config = plan_config(SIZES, shuffle_algo=algo, **changes)
    cache = private_dir(tmp_path / "counts")
    nodes, ranks, workers = config["world"]
    indices = sorted(itertools.product(range(nodes), range(ranks), range(workers)), reverse=True)
    for n, index in enumerate(indices):
        want, _ = _core.plan_worker(config, *index)
        got, stats = plan_in_pieces(config, index, cache)
        np.testing.assert_array_equal(got, want, err_msg=str(index))
        assert stats is not None and stats[2] is None, stats
        if n == 0:
            assert stats[0] == 0 and stats[1] >= 1, stats
        else:
            assert stats[0] >= 1, stats
    names = sorted(os.listdir(cache))
    assert names and all(name.startswith(f"{algo}-") and name.endswith(".bin") for name in names)


@pytest.mark.parametrize("algo", ALGOS)
def test_a_new_process_reads_what_this_one_counted(algo: str, tmp_path: Path) -> None:
    config = plan_config(SIZES, shuffle_algo=algo, num_canonical_nodes=1)
    cache = private_dir(tmp_path / "counts")
    want, stats = plan_in_pieces(config, (0, 0, 0), cache)
    assert stats is not None and stats[1] == 1
    script = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        from streamx import _core
        config = json.loads(sys.argv[1])
        config["streams"] = [tuple(s) for s in config["streams"]]
        config["world"] = tuple(config["world"])
        pieces, _ = _core.plan_worker_pieces(
            config, 0, 0, 0, count_cache_dir={str(cache)!r}, count_cache_min_samples=0
        )
        out = []
        while len(ids := pieces.next_piece(13)):
            out.extend(int(i) for i in ids)
        print(json.dumps([out, pieces.count_cache_stats]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    got, got_stats = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(np.asarray(got), want)
    assert got_stats[0] == 1 and got_stats[2] is None, got_stats


@pytest.mark.parametrize("algo", ALGOS)
def test_workers_resuming_together_count_once(algo: str, tmp_path: Path) -> None:
    """Three workers resuming at half of a 10^8-sample canonical node: one counts the half
    and writes it; the others wait for the lock, then read it."""
    config = plan_config(
        [250_000] * 400,
        shuffle_algo=algo,
        num_canonical_nodes=1,
        world=(1, 1, 3),
        sample_in_epoch=50_000_001,
    )
    cache = private_dir(tmp_path / "counts")
    stats = [tuple(result["stats"]) for result in race(config, cache, 3)]
    stats.sort()
    # One counted and wrote; the two others read what it wrote (not counting it again).
    assert stats[0] == (0, 1, None), stats
    assert all(s[0] == 1 and s[2] is None for s in stats[1:]), stats
    assert not [name for name in os.listdir(cache) if name.endswith(".lock")]


def test_py2s_reports_a_refused_run_layout_file(tmp_path: Path) -> None:
    """py2s keeps two files (the epoch's, the run layout's): a damaged run-layout file is
    reported by name in ``count_cache_stats``, while the epoch's file is still read."""
    config = plan_config(SIZES, shuffle_algo="py2s", num_canonical_nodes=1)
    cache = private_dir(tmp_path / "counts")
    want, _ = plan_in_pieces(config, (0, 0, 0), cache)
    (run,) = [name for name in os.listdir(cache) if name.startswith("py2s-run-")]
    data = bytearray((cache / run).read_bytes())
    data[len(data) // 2] ^= 8
    (cache / run).write_bytes(bytes(data))
    got, stats = plan_in_pieces(config, (0, 0, 0), cache)
    np.testing.assert_array_equal(got, want)
    assert stats is not None and stats[0] == 1, stats
    assert stats[2] is not None and run in stats[2], stats
    assert "does not hold this run's layout draws" in stats[2]
