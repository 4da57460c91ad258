"""``hf://`` Parquet splits and WebDataset tars read in place, through ``HF_ENDPOINT``, from
a local server answering the Hub's API (``hub_server.py``); no test needs the internet."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hub_server import HubServer, write_repo
from pq_data import table
from wds_data import tar_bytes

from streamx import ParquetStream, StreamingDataset, WebDatasetStream

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]
_MAIN = Path(__file__).with_name("hub_main.py")


def _parquet(rows: int, start: int) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table(rows, start), buffer, row_group_size=20)
    return buffer.getvalue()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubServer]:
    pytest.importorskip("huggingface_hub")
    files = {
        "data/train-00000-of-00002.parquet": _parquet(50, 0),
        "data/train-00001-of-00002.parquet": _parquet(30, 50),
        "data/test-00000-of-00001.parquet": _parquet(10, 1000),
        "tars/shard-0.tar": tar_bytes(range(0, 12)),
        "tars/shard-1.tar": tar_bytes(range(12, 20)),
        "README.md": b"# a dataset card",
    }
    root = tmp_path / "hub"
    write_repo(root, "org", "ds", files)
    write_repo(root, "org", "secret", {"data/x.parquet": _parquet(5, 0)})
    for name, data in files.items():  # the same files on local disk, for the oracle runs
        (tmp_path / "copy" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "copy" / name).write_bytes(data)
    with HubServer(root, gated=("org/secret",)) as server:
        yield server


def _run(hub: HubServer, kind: str, source: str, local: Path) -> dict[str, Any]:
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, str(_MAIN), kind, source, str(local)],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _local_ids(stream: ParquetStream | WebDatasetStream) -> list[int]:
    ds = StreamingDataset(streams=[stream], shuffle=True, shuffle_seed=5, batch_size=4)
    return [int(s["id"] if "id" in s else s["cls"]) for s in ds]


def test_a_parquet_split_streams_as_its_local_copy(hub: HubServer, tmp_path: Path) -> None:
    source = "hf://datasets/org/ds@main/data/train-*.parquet"
    got = _run(hub, "parquet", source, tmp_path / "c")
    assert got["shards"] == [20, 20, 10, 20, 10] and got["ok"]
    local = ParquetStream(
        remote=str(tmp_path / "copy" / "data" / "train-*.parquet"),
        local=str(tmp_path / "lc"),
        columns=["id", "text"],
    )
    assert got["ids"] == _local_ids(local)
    assert sorted(got["ids"]) == list(range(80))
    ranged = [r for r in hub.requests if "/resolve/" in r]
    assert ranged and all("train-" in r for r in ranged)  # the test split is never read


def test_a_projection_downloads_its_column_chunks_only(hub: HubServer, tmp_path: Path) -> None:
    wide = io.BytesIO()
    pq.write_table(table(4000), wide, row_group_size=1000)
    write_repo(hub.root, "org", "wide", {"data/t.parquet": wide.getvalue()})
    got = _run(hub, "narrow", "hf://datasets/org/wide/data/t.parquet", tmp_path / "c")
    assert got["ok"] and sorted(got["ids"]) == list(range(4000))
    # The footer and the two columns' chunks: not the blobs and strings, nor read-ahead.
    assert 0 < hub.bytes_sent < 0.25 * len(wide.getvalue())


def test_tars_in_a_repo(hub: HubServer, tmp_path: Path) -> None:
    got = _run(hub, "wds", "hf://datasets/org/ds/tars", tmp_path / "c")
    assert got["shards"] == [12, 8]
    local = WebDatasetStream(remote=str(tmp_path / "copy" / "tars"), local=str(tmp_path / "lc"))
    assert got["ids"] == _local_ids(local)


def test_a_gated_repository_says_what_the_hub_says(hub: HubServer, tmp_path: Path) -> None:
    got = _run(hub, "parquet", "hf://datasets/org/secret/data", tmp_path / "c")
    assert got["error"] == "PermissionError"
    assert "refused access to dataset org/secret" in got["message"]
    assert "You must have access to it and be authenticated" in got["message"]


def test_a_missing_repository_is_named(hub: HubServer, tmp_path: Path) -> None:
    got = _run(hub, "parquet", "hf://datasets/org/nope/data", tmp_path / "c")
    assert got["error"] == "FileNotFoundError"
    assert "org/nope/data" in got["message"]
