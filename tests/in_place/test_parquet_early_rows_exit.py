"""A process that read a Parquet row by range before its row group arrived exits leaving no
file open for the collector to find (``format/parquet/early_rows.py``'s scratch files), and
a forked child does not reuse or close its parent's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import text_rows_parquet

ROWS = 20000  # one row group of about 7 MB, read by range

# Reads a deep row (by its page), then, in a forked child, another: the child's is read by
# range into a scratch file of its own.
_CHILD = """
import os, sys
import streamx
from streamx.format.parquet import early_rows

stream = streamx.ParquetStream(
    remote=sys.argv[1], local=sys.argv[2], download_timeout=30, download_retry=1
)
dataset = streamx.StreamingDataset(streams=[stream])
print(dataset[int(sys.argv[3])]["id"], len(early_rows._GROUPS), flush=True)
child = os.fork()
if child == 0:
    print(len(early_rows._GROUPS), dataset[int(sys.argv[3]) - 5000]["id"], flush=True)
    sys.exit(0)  # as a plain interpreter exits: its finalizers run
_, status = os.waitpid(child, 0)
assert os.waitstatus_to_exitcode(status) == 0
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    (tmp_path / "served").mkdir()
    data = text_rows_parquet(ROWS, 5, write_batch_size=64, write_page_index=True)
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    with Nginx(tmp_path / "served") as server:
        yield server


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_process_that_read_a_row_early_exits_with_no_file_left_open(
    served: Nginx, tmp_path: Path
) -> None:
    argv = [sys.executable, "-W", "always::ResourceWarning", "-c", _CHILD]
    argv += [f"{served.endpoint}/t.parquet", str(tmp_path / "c"), str(ROWS - 1)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    # The parent's row read early (its group open at exit); the child's from a group of its
    # own, none inherited.
    assert done.stdout.split() == [str(ROWS - 1), "1", "0", str(ROWS - 5001)]
    assert "ResourceWarning" not in done.stderr, done.stderr[-2000:]
