"""``streamx verify`` reports one line per bad shard, naming the shard (not a scratch path),
and goes on past a shard it cannot fetch: the report, ``--json`` too, is always printed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from cli_run import run_cli


def _corrupt(dataset: str, tmp_path: Path) -> str:
    bad = str(tmp_path / "bad")
    shutil.copytree(dataset, bad)
    with open(os.path.join(bad, "shard.00003.mds.zstd"), "r+b") as file:
        file.seek(30)
        byte = file.read(1)
        file.seek(30)
        file.write(bytes([byte[0] ^ 0xFF]))
    path = os.path.join(bad, "shard.00005.mds.zstd")
    with open(path, "rb") as file:
        data = file.read()
    with open(path, "wb") as file:
        file.write(data[:-20])
    return bad


def test_one_line_per_bad_shard(dataset: str, tmp_path: Path) -> None:
    bad = _corrupt(dataset, tmp_path)
    result = run_cli("verify", bad, process=True)
    assert result.code == 1, result
    lines = result.out.strip().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("BAD shard.00003.mds: shard.00003.mds.zstd: sha1 is ")
    assert "none of its " in lines[0] and "Corrupt shard shard.00003.mds.zstd" in lines[0]
    assert lines[1].startswith("BAD shard.00005.mds: shard.00005.mds.zstd: ")
    assert "streamx-verify-" not in result.out, "no deleted scratch path"
    assert lines[2].startswith(
        "2 bad shard(s): checked sizes and hashes of 33 shards and decoded all"
    )


def test_json_has_one_sample_problem_per_shard(dataset: str, tmp_path: Path) -> None:
    result = run_cli("verify", _corrupt(dataset, tmp_path), "--json", process=True)
    assert result.code == 1
    report = json.loads(result.out)
    decoding = [p for p in report["problems"] if p["sample"] is not None]
    assert [(p["shard"], p["sample"]) for p in decoding] == [
        ("shard.00003.mds", 0),
        ("shard.00005.mds", 0),
    ]


def test_truncated_remote_shard_does_not_stop_the_report(s3: Any, s3_dataset: str) -> None:
    data = s3.get("ds/shard.00002.mds.zstd")
    s3.put("ds/shard.00002.mds.zstd", data[: len(data) // 2])
    result = run_cli("verify", s3_dataset, "--json", process=True)
    assert result.code == 1, result
    report = json.loads(result.out)
    assert (report["shards"], report["samples"], report["bad_shards"]) == (33, 300, 1)
    assert {p["shard"] for p in report["problems"]} == {"shard.00002.mds"}
    human = run_cli("verify", s3_dataset, process=True)
    assert human.code == 1
    lines = human.out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("BAD shard.00002.mds: "), lines
    assert lines[1].startswith(
        "1 bad shard(s): checked sizes and hashes of 33 shards and decoded all"
    )
