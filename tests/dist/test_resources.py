"""No descriptor or memory growth across many dataset instances (mosaicml-streaming leaks
about 12 descriptors and its shared memory per instance), with and without torchrun's
variables set. Each run is a fresh interpreter, so the counts are this library's alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from dist_harness import free_port

pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs

PROBE = Path(__file__).resolve().with_name("dist_fd_probe.py")


@pytest.mark.parametrize("world", ["single", "rank0_of_2"])
def test_no_fd_or_memory_growth(node_dirs: Callable[..., list[str]], world: str) -> None:
    local = node_dirs(1)[0]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    if world == "rank0_of_2":  # a lone rank of a 2-rank job: nothing waits for rank 1
        env.update(
            RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
        )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(PROBE), local, "200", "10"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["fd_after"] == result["fd_before"], result
    assert result["fd_after_loaders"] == result["fd_before"], result
    assert result["rss_after_kib"] - result["rss_before_kib"] < 16 * 1024, result
    assert result["same_order"], "a new instance did not start at epoch 0"
    assert result["independent"], "two live instances shared an epoch counter"
    assert result["live_runs"] == 2
    assert result["runs_left"] == []
