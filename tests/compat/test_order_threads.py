"""The epoch order does not depend on the plan's thread count: py1e sorts canonical nodes on
the pool while the next node is drawn, and a pool of one thread must neither deadlock nor
reorder (each count runs in a fresh process, since the pool is built once per process)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.typing import NDArray

from streamx.base.shuffle import get_shuffle

_PROBE = """
import hashlib, sys
import numpy as np
from streamx.base.shuffle import get_shuffle
sizes = np.array([int(s) for s in sys.argv[1].split(",")], dtype=np.int64)
ids = get_shuffle("py1e", sizes, int(sys.argv[2]), 1234, 3, int(sys.argv[3]))
print(hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest())
"""


def _digest(ids: NDArray[np.int64]) -> str:
    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_py1e_order_same_for_any_thread_count(threads: int) -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 3_000, size=300).astype(np.int64)
    nodes, block = 9, 5_000
    expected = _digest(get_shuffle("py1e", sizes, nodes, 1234, 3, block))
    env = dict(os.environ, STREAMX_NUM_THREADS=str(threads))
    args = [",".join(map(str, sizes)), str(nodes), str(block)]
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert run.stdout.strip() == expected
