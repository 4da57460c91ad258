"""``streamx inspect`` on real datasets, local and on moto's S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_run import PYTHONPATH_DIR, assert_one_line_failure, run_cli

from streamx.format.index import parse_index


def test_inspect_json_matches_the_index(dataset: str) -> None:
    shards = parse_index(dataset, None, os.path.join(dataset, "index.json"))
    result = run_cli("inspect", dataset, "--json")
    assert result.code == 0, result.err
    (split,) = json.loads(result.out)["splits"]
    assert split["split"] == ""
    assert split["format_version"] == 2
    assert split["shards"] == len(shards)
    assert split["samples"] == 300
    assert split["raw_bytes"] == sum(s.raw_data.bytes for s in shards)
    assert split["zip_bytes"] == sum(s.zip_data.bytes for s in shards if s.zip_data)
    assert split["compression"] == ["zstd"]
    assert split["hashes"] == ["sha1", "xxh64"]
    assert [(c["name"], c["encoding"]) for c in split["columns"]] == [
        ("blob", "bytes"),
        ("id", "int"),
        ("tokens", "ndarray:int32:16"),
    ]


def test_inspect_prints_decoded_samples_within_the_width(dataset: str) -> None:
    result = run_cli("inspect", dataset, "--samples", "3", env={"COLUMNS": "60"}, process=True)
    assert result.code == 0, result.err
    ids = [line.strip() for line in result.out.splitlines() if line.strip().startswith("id:")]
    assert ids == ["id: 0", "id: 1", "id: 2"]
    blob_lines = [line for line in result.out.splitlines() if line.strip().startswith("blob:")]
    assert len(blob_lines) == 3
    assert all(len(line) <= 60 and line.endswith("…") for line in blob_lines)


def test_inspect_finds_every_split(split_dataset: str) -> None:
    result = run_cli("inspect", split_dataset, "--json")
    assert result.code == 0, result.err
    splits = {s["split"]: s for s in json.loads(result.out)["splits"]}
    assert sorted(splits) == ["train", "val"]
    assert (splits["train"]["samples"], splits["val"]["samples"]) == (100, 40)
    assert splits["train"]["compression"] == ["none"]
    assert splits["train"]["zip_bytes"] is None


def test_inspect_s3_dataset_matches_local(dataset: str, s3_dataset: str) -> None:
    (local,) = json.loads(run_cli("inspect", dataset, "--json").out)["splits"]
    remote = run_cli("inspect", s3_dataset, "--json", "--samples", "2")
    assert remote.code == 0, remote.err
    (split,) = json.loads(remote.out)["splits"]
    shown = split.pop("samples_shown")
    assert [s["id"] for s in shown] == ["0", "1"]
    assert shown[1]["tokens"].startswith("ndarray int32[16] [1, 8, 15,")
    assert split == {k: v for k, v in local.items() if k != "samples_shown"}


def test_inspect_failures_are_one_line(tmp_path: os.PathLike[str]) -> None:
    assert_one_line_failure(
        run_cli("inspect", str(tmp_path), process=True), "No index.json", str(tmp_path)
    )
    assert_one_line_failure(run_cli("inspect", os.path.join(str(tmp_path), "nope")), "nope")
    bad = os.path.join(str(tmp_path), "index.json")
    with open(bad, "w") as file:
        file.write("{not json")
    assert_one_line_failure(run_cli("inspect", str(tmp_path), process=True), "IndexJSONError")


def test_console_script_and_module_run_the_same_app() -> None:
    script = os.path.join(os.path.dirname(sys.executable), "streamx")
    if not os.path.exists(script):
        pytest.skip("the streamx console script is not installed in this environment")
    env = {**os.environ, "PYTHONPATH": PYTHONPATH_DIR}
    by_script = subprocess.run(
        [script, "--help"], capture_output=True, text=True, env=env, check=True
    )
    by_module = run_cli("--help", process=True)
    assert by_module.code == 0
    for command in ("inspect", "verify", "cp", "merge-index", "bench", "cache"):
        assert command in by_script.stdout and command in by_module.out
