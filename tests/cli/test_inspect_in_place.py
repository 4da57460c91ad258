"""``streamx inspect`` over sources read in place: Parquet files, WebDataset tars (alone or
through a wids shard index), local and on moto's S3."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from cli_run import assert_one_line_failure, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "in_place"))
from wds_data import tar_bytes, write_tars

from streamx.format.webdataset.write_index import write_shard_index


def _split(result: Any) -> dict[str, Any]:
    assert result.code == 0, result.err
    (split,) = json.loads(result.out)["splits"]
    return dict(split)


def test_parquet_file_row_groups_and_columns(tmp_path: Path) -> None:
    rows = pa.table({"id": list(range(50)), "text": [f"t{i}" for i in range(50)]})
    pq.write_table(rows, tmp_path / "t.parquet", row_group_size=20)
    split = _split(run_cli("inspect", str(tmp_path / "t.parquet"), "--json", "-n", "2"))
    assert (split["formats"], split["shards"], split["samples"]) == (["parquet"], 3, 50)
    assert [(c["name"], c["encoding"]) for c in split["columns"]] == [
        ("id", "int64"),
        ("text", "string"),
    ]
    assert [s["text"] for s in split["samples_shown"]] == ["'t0'", "'t1'"]


def test_a_directory_of_tars_and_its_shard_index(tmp_path: Path) -> None:
    write_tars(str(tmp_path / "tars"), [6, 4])
    split = _split(run_cli("inspect", str(tmp_path / "tars"), "--json"))
    assert (split["formats"], split["shards"], split["samples"]) == (["wds"], 2, 10)
    assert [c["name"] for c in split["columns"]] == ["cls", "json", "txt", "npy", "seg.bin"]
    write_shard_index(str(tmp_path / "tars"), str(tmp_path / "tars" / "shards.json"))
    indexed = _split(run_cli("inspect", str(tmp_path / "tars" / "shards.json"), "--json"))
    assert (indexed["shards"], indexed["samples"]) == (2, 10)
    shown = run_cli("inspect", str(tmp_path / "tars"), "-n", "1", process=True)
    assert shown.code == 0, shown.err
    assert "read in place (wds)" in shown.out and "__key__: 'sample-00000'" in shown.out


def test_s3_tars_by_brace_notation(s3: Any) -> None:
    s3.put("cli-wds/a-0.tar", tar_bytes(range(3)))
    s3.put("cli-wds/a-1.tar", tar_bytes(range(3, 8)))
    split = _split(run_cli("inspect", s3.url("cli-wds/a-{0..1}.tar"), "--json"))
    assert (split["shards"], split["samples"]) == (2, 8)


def test_a_file_that_is_not_a_tar_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"<html>" * 200)
    assert_one_line_failure(run_cli("inspect", str(bad), process=True), "bad.tar is not a tar file")


def test_format_mds_keeps_the_index_reading(tmp_path: Path) -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": [1]}), buf)
    (tmp_path / "t.parquet").write_bytes(buf.getvalue())
    assert_one_line_failure(
        run_cli("inspect", str(tmp_path), "--format", "mds", process=True), "No index.json"
    )
