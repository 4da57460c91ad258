"""A pass left unfinished when the interpreter exits ends quietly.

Python closes such a generator only after it tore the modules down (their globals are
``None`` by then): the pass's release of its shards used to run into that and print
"Exception ignored in: <generator object worker_batches ...> TypeError" at every exit of a
training script that stopped mid-epoch. Seen with torch imported before streamx and a
Parquet source served over HTTP, which is the case run here, in a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

SCRIPT = """
import sys
import torch
import streamx

stream = streamx.ParquetStream(remote=sys.argv[1], local=sys.argv[2])
dataset = streamx.StreamingDataset(streams=[stream], batch_size=8, shuffle=False)
loader = streamx.StreamingDataLoader(dataset, batch_size=8, batched=sys.argv[3] == "1")
batches = iter(loader)
print(next(batches)["id"].tolist())
"""


@pytest.mark.parametrize("batched", ["1", "0"], ids=["batched", "per-sample"])
def test_a_pass_left_mid_epoch_exits_without_an_ignored_exception(
    batched: str, tmp_path: Path
) -> None:
    source = tmp_path / "root" / "src"
    source.mkdir(parents=True)
    for number in range(2):
        ids = list(range(number * 1000, number * 1000 + 1000))
        table = pa.table({"id": ids, "text": ["a" * 20] * 1000, "score": [1.5] * 1000})
        pq.write_table(table, source / f"p{number}.parquet", row_group_size=100)
    with Nginx(tmp_path / "root") as nginx:
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                SCRIPT,
                f"{nginx.endpoint}/src/p{{0..1}}.parquet",
                str(tmp_path / "cache"),
                batched,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONWARNINGS": "default"},
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(list(range(8)))
    assert "Exception ignored" not in run.stderr, run.stderr
