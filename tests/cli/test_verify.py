"""``streamx verify``: good datasets pass; every bad shard and sample is named, exit 1."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import pytest
from cli_run import assert_one_line_failure, run_cli

import streamx


def _copy(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0xFF]))


@pytest.mark.parametrize("quick", [False, True])
def test_good_dataset_passes(dataset: str, quick: bool) -> None:
    before = sorted(os.listdir(dataset))
    result = run_cli("verify", dataset, "--json", *(["--quick"] if quick else []))
    assert result.code == 0, result.err
    assert sorted(os.listdir(dataset)) == before  # nothing decompressed beside the user's files
    report = json.loads(result.out)
    assert report["ok"] and report["problems"] == []
    assert (report["samples"], report["decoded"]) == (300, not quick)


def test_splits_are_all_checked(split_dataset: str) -> None:
    result = run_cli("verify", split_dataset)
    assert result.code == 0, result.err
    assert "OK" in result.out and "140 samples" in result.out


def test_bad_and_missing_shards_are_named(dataset: str, tmp_path: Any) -> None:
    bad = _copy(dataset, str(tmp_path / "bad"))
    _flip(os.path.join(bad, "shard.00003.mds.zstd"), 30)
    os.remove(os.path.join(bad, "shard.00007.mds.zstd"))
    with open(os.path.join(bad, "shard.00009.mds.zstd"), "ab") as file:
        file.write(b"x")
    result = run_cli("verify", bad, "--json")
    assert result.code == 1
    report = json.loads(result.out)
    assert not report["ok"] and report["bad_shards"] == 3
    by_shard: dict[str, list[str]] = {}
    for p in report["problems"]:
        by_shard.setdefault(p["shard"], []).append(p["problem"])
    assert sorted(by_shard) == ["shard.00003.mds", "shard.00007.mds", "shard.00009.mds"]
    assert any("sha1 is" in p for p in by_shard["shard.00003.mds"])
    assert by_shard["shard.00007.mds"] == ["shard.00007.mds.zstd: missing"]
    assert any("the index says" in p for p in by_shard["shard.00009.mds"])
    human = run_cli("verify", bad, process=True)
    assert human.code == 1
    assert "BAD shard.00003.mds" in human.out and "3 bad shard(s)" in human.out


def test_bad_samples_are_named(tmp_path: Any) -> None:
    """No hashes to catch it: a corrupt pickle is found by decoding, and named by sample."""
    out = str(tmp_path / "pkl")
    with streamx.MDSWriter(out=out, columns={"obj": "pkl"}, compression=None) as writer:
        for i in range(10):
            writer.write({"obj": {"value": i, "pad": "p" * 50}})
    shard = os.path.join(out, "shard.00000.mds")
    with open(shard, "rb") as file:
        data = file.read()
    start = data.index(b"pad") - 20  # inside the pickle of sample 0
    _flip(shard, start)
    assert run_cli("verify", out, "--quick").code == 0
    result = run_cli("verify", out, "--json")
    assert result.code == 1
    problems = json.loads(result.out)["problems"]
    assert [(p["shard"], p["sample"]) for p in problems] == [("shard.00000.mds", 0)]


def test_s3_dataset_verifies_and_names_a_bad_object(s3: Any, s3_dataset: str) -> None:
    good = run_cli("verify", s3_dataset, "--json", "-j", "4")
    assert good.code == 0, good.err
    assert json.loads(good.out)["samples"] == 300
    data = bytearray(s3.get("ds/shard.00002.mds.zstd"))
    data[25] ^= 0xFF
    s3.put("ds/shard.00002.mds.zstd", bytes(data))
    bad = run_cli("verify", s3_dataset, "--json")
    assert bad.code == 1
    assert {p["shard"] for p in json.loads(bad.out)["problems"]} == {"shard.00002.mds"}


def test_unreachable_dataset_is_a_one_line_failure(s3: Any) -> None:
    assert_one_line_failure(run_cli("verify", s3.url("absent"), process=True), "No index.json")


def test_an_index_without_hashes_is_not_said_to_have_hashes_checked(tmp_path: Any) -> None:
    out = str(tmp_path / "plain")
    with streamx.MDSWriter(out=out, columns={"id": "int"}) as writer:  # no hashes asked for
        for i in range(5):
            writer.write({"id": i})
    human = run_cli("verify", out)
    assert human.code == 0, human.err
    assert "checked sizes (the index lists no hashes) of 1 shards" in human.out
    assert "hashes of" not in human.out
    report = json.loads(run_cli("verify", out, "--json").out)
    assert report["ok"] and report["hashes_checked"] is False


def test_an_index_with_hashes_says_so(dataset: str) -> None:
    report = json.loads(run_cli("verify", dataset, "--json", "--quick").out)
    assert report["hashes_checked"] is True
    human = run_cli("verify", dataset, "--quick")
    assert "OK: checked sizes and hashes of 33 shards (300 samples)" in human.out, human.out
