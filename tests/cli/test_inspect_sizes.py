"""``streamx inspect`` reports the largest shard's raw and compressed sizes apart: each is
bounded by the size limit, their sum is not."""

from __future__ import annotations

import json
import os

from cli_run import run_cli

from streamx.cli.output import human_bytes
from streamx.format.index import parse_index


def test_largest_shard_raw_and_compressed_apart(dataset: str) -> None:
    shards = parse_index(dataset, None, os.path.join(dataset, "index.json"))
    result = run_cli("inspect", dataset, "--json", process=True)
    assert result.code == 0, result.err
    (split,) = json.loads(result.out)["splits"]
    raw = max(s.raw_data.bytes for s in shards)
    packed = max(s.zip_data.bytes for s in shards if s.zip_data)
    assert (split["largest_shard_raw_bytes"], split["largest_shard_zip_bytes"]) == (raw, packed)
    assert split["largest_shard_raw_bytes"] <= split["size_limit"]
    assert "largest_shard_bytes" not in split
    human = run_cli("inspect", dataset, process=True)
    (line,) = [x for x in human.out.splitlines() if x.startswith("largest shard")]
    assert " ".join(line.split()) == (
        f"largest shard {human_bytes(raw)} raw, {human_bytes(packed)} compressed"
    )


def test_uncompressed_split_shows_raw_only(split_dataset: str) -> None:
    result = run_cli("inspect", split_dataset, "--json", process=True)
    splits = {s["split"]: s for s in json.loads(result.out)["splits"]}
    assert splits["train"]["largest_shard_zip_bytes"] is None
    assert splits["val"]["largest_shard_zip_bytes"] is not None
    human = run_cli("inspect", split_dataset, process=True)
    lines = [x for x in human.out.splitlines() if x.startswith("largest shard")]
    assert len(lines) == 2
    assert sum("compressed" in x for x in lines) == 1
