"""``streamx cp`` between local disk and moto's S3, and ``streamx merge-index``."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from typing import Any

import remote_data
from cli_run import assert_one_line_failure, run_cli

from streamx.storage.merge_index import merge_index


def test_cp_local_to_s3_and_back_is_byte_identical(
    s3: Any, split_dataset: str, tmp_path: Any
) -> None:
    up = run_cli("cp", split_dataset, s3.url("copy"), "--json")
    assert up.code == 0, up.err
    summary = json.loads(up.out)
    files = [os.path.join(r, f) for r, _, fs in os.walk(split_dataset) for f in fs]
    assert summary["files"] == len(files)
    assert summary["bytes"] == sum(os.path.getsize(f) for f in files)
    back = str(tmp_path / "back")
    down = run_cli("cp", s3.url("copy"), back)
    assert down.code == 0, down.err
    for split in ("train", "val"):
        names = sorted(os.listdir(os.path.join(split_dataset, split)))
        assert sorted(os.listdir(os.path.join(back, split))) == names
        _, mismatch, errors = filecmp.cmpfiles(
            os.path.join(split_dataset, split), os.path.join(back, split), names, shallow=False
        )
        assert (mismatch, errors) == ([], [])
    assert run_cli("verify", back, "--quick").code == 0


def test_cp_refuses_a_bad_source_and_leaves_no_index(dataset: str, tmp_path: Any) -> None:
    bad = str(tmp_path / "bad")
    shutil.copytree(dataset, bad)
    with open(os.path.join(bad, "shard.00004.mds.zstd"), "r+b") as file:
        file.seek(10)
        file.write(b"\x00\x01\x02")
    dst = str(tmp_path / "dst")
    result = run_cli("cp", bad, dst, process=True)
    assert_one_line_failure(result, "shard.00004.mds.zstd", "sha1")
    assert not os.path.exists(os.path.join(dst, "index.json"))


def test_merge_index_matches_the_library(tmp_path: Any) -> None:
    root = tmp_path / "parts"
    for p in range(3):
        remote_data.write(str(root / f"part{p}"), 20, first=100 * p)
    expected_root = tmp_path / "expected"
    shutil.copytree(root, expected_root)
    merge_index(str(expected_root))
    result = run_cli("merge-index", str(root), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["samples"] == 60
    with open(root / "index.json") as a, open(expected_root / "index.json") as b:
        assert json.load(a) == json.load(b)
    listed = tmp_path / "listed"
    shutil.copytree(root, listed)
    os.remove(listed / "index.json")
    only_two = run_cli(
        "merge-index",
        str(listed),
        str(listed / "part0"),
        str(listed / "part2" / "index.json"),
        "--json",
    )
    assert only_two.code == 0, only_two.err
    assert json.loads(only_two.out)["samples"] == 40
    assert run_cli("verify", str(listed)).code == 0


def test_merge_index_on_s3(s3: Any, tmp_path: Any) -> None:
    for p in range(2):
        remote_data.write((str(tmp_path / f"p{p}"), s3.url(f"root/p{p}")), 15, first=50 * p)
    result = run_cli("merge-index", s3.url("root"), "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    merged = json.loads(s3.get("root/index.json"))
    assert summary == {
        "index": s3.url("root/index.json"),
        "shards": len(merged["shards"]),
        "samples": 30,
    }
    assert {s["raw_data"]["basename"].split("/")[0] for s in merged["shards"]} == {"p0", "p1"}


def test_merge_index_without_partitions_fails_in_one_line(tmp_path: Any) -> None:
    assert_one_line_failure(run_cli("merge-index", str(tmp_path / "nothing-here")))
