"""``streamx inspect`` and ``verify`` over sources read in place: Parquet files and
WebDataset tars (alone or through a wids shard index), local and on moto's S3."""

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


def test_verify_decodes_every_sample_of_tars_and_names_a_bad_one(tmp_path: Path) -> None:
    import tarfile

    from wds_data import add

    write_tars(str(tmp_path / "tars"), [5, 5])
    good = run_cli("verify", str(tmp_path / "tars"), "--json")
    assert good.code == 0, good.err
    report = json.loads(good.out)
    assert (report["ok"], report["shards"], report["samples"]) == (True, 2, 10)
    with tarfile.open(tmp_path / "tars" / "shard-0002.tar", "w") as tar:
        add(tar, "k0.json", b"{}")
        add(tar, "k1.json", b"{not json")
    bad = run_cli("verify", str(tmp_path / "tars"), process=True)
    assert bad.code == 1
    assert "BAD" in bad.out and "shard-0002.tar" in bad.out and "not a valid .json" in bad.out
    assert "decoded all 12 samples" in bad.out


def test_verify_names_a_garbled_row_group(tmp_path: Path) -> None:
    rows = pa.table({"id": list(range(40)), "text": [f"t{i}" for i in range(40)]})
    path = tmp_path / "g.parquet"
    pq.write_table(rows, path, row_group_size=20, compression="none")
    md = pq.read_metadata(path)
    second = md.row_group(1).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[second : second + 16] = b"\xff" * 16  # the second row group's first page header
    path.write_bytes(bytes(data))
    result = run_cli("verify", str(path), "--json")
    assert result.code == 1
    report = json.loads(result.out)
    assert report["bad_shards"] == 1 and report["samples"] == 40
    (problem,) = report["problems"]
    assert problem["shard"].endswith("g.parquet row group 1") and problem["sample"] == 0
    assert "does not decode" in problem["problem"]


def test_a_litdata_directory_is_recognised(tmp_path: Path) -> None:
    from lit_data import write_litdata

    write_litdata(str(tmp_path / "lit"), 20, 8, images=False)
    split = _split(run_cli("inspect", str(tmp_path / "lit"), "--json"))
    assert (split["formats"], split["shards"], split["samples"]) == (["litdata"], 3, 20)
    assert [c["name"] for c in split["columns"]][:3] == ["id", "text", "score"]
    verified = run_cli("verify", str(tmp_path / "lit"), "--json")
    assert verified.code == 0 and json.loads(verified.out)["ok"] is True
