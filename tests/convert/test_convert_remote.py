"""Converting straight to S3 (moto's server on 127.0.0.1), and the errors of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from convert_helpers import read_both

from streamx.convert import ConvertError, convert
from streamx.storage import filesystems


def _parquet(path: Any, rows: int = 50) -> None:
    table = pa.table({"text": [f"r{i}" for i in range(rows)], "id": list(range(rows))})
    pq.write_table(table, path, row_group_size=10)


@pytest.mark.remote
def test_convert_to_s3(tmp_path: Any, s3: Any) -> None:
    _parquet(tmp_path / "t.parquet")
    result = convert(str(tmp_path / "t.parquet"), s3.url("ds"), num_workers=2, progress=False)
    assert (result.parts, result.samples) == (5, 50)
    keys = {o["Key"] for o in s3.client.list_objects_v2(Bucket=s3.bucket)["Contents"]}
    assert "ds/index.json" in keys and "ds/part-00004/index.json" in keys
    assert not any(".streamx-convert" in k for k in keys)
    rows = read_both(str(tmp_path / "cache"), remote=s3.url("ds"))
    assert [(r["text"], int(r["id"])) for r in rows] == [(f"r{i}", i) for i in range(50)]


@pytest.mark.remote
def test_remote_without_credentials(
    tmp_path: Any, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _parquet(tmp_path / "t.parquet")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    filesystems.clear_cache()
    with pytest.raises(ConvertError, match=f"s3://{s3.bucket}/ds"):
        convert(str(tmp_path / "t.parquet"), s3.url("ds"), progress=False)
    filesystems.clear_cache()


def test_row_that_does_not_fit_names_file_and_row(tmp_path: Any) -> None:
    lines = [json.dumps({"n": i, "s": "ok"}) for i in range(5)]
    os.makedirs(tmp_path / "in")
    (tmp_path / "in" / "a.jsonl").write_text("\n".join(lines) + "\n")
    lines[3] = json.dumps({"n": "three", "s": "bad"})  # the schema comes from a.jsonl
    (tmp_path / "in" / "b.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConvertError) as info:
        convert(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=1, progress=False)
    message = str(info.value)
    assert str(tmp_path / "in" / "b.jsonl") in message
    assert "row 3" in message and "'n'" in message and "'three'" in message
    assert not os.path.exists(tmp_path / "out" / "index.json")
    assert [p for p in os.listdir(tmp_path / "out") if p.startswith("part-")] == ["part-00000"]
    assert os.listdir(tmp_path / "out" / ".streamx-convert") == []  # no half-written part


def test_unreadable_file_is_named(tmp_path: Any) -> None:
    os.makedirs(tmp_path / "in")
    _parquet(tmp_path / "in" / "a.parquet")
    (tmp_path / "in" / "b.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ConvertError, match="b.parquet"):
        convert(str(tmp_path / "in"), str(tmp_path / "out"), progress=False)


def test_resume_refuses_other_settings(tmp_path: Any) -> None:
    _parquet(tmp_path / "t.parquet")
    convert(str(tmp_path / "t.parquet"), str(tmp_path / "out"), progress=False)
    with pytest.raises(ConvertError, match="already holds"):
        convert(str(tmp_path / "t.parquet"), str(tmp_path / "out"), progress=False)
    os.makedirs(tmp_path / "half")
    (tmp_path / "half" / ".streamx-convert.json").write_text("{}")
    with pytest.raises(ConvertError, match="different input or settings"):
        convert(str(tmp_path / "t.parquet"), str(tmp_path / "half"), progress=False)


def test_cli(tmp_path: Any) -> None:
    _parquet(tmp_path / "t.parquet")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamx",
            "convert",
            str(tmp_path / "t.parquet"),
            str(tmp_path / "out"),
            "-j",
            "2",
            "-c",
            "id=int",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "Wrote 50 samples in 5 parts" in run.stdout
    assert [r["id"] for r in read_both(str(tmp_path / "out"))] == list(range(50))
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamx",
            "convert",
            str(tmp_path / "missing"),
            str(tmp_path / "o2"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert "missing" in bad.stderr and "Traceback" not in bad.stderr
