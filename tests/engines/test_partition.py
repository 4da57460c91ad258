"""The engine-neutral partition writer every engine task runs, without an engine."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from engine_data import read_streamx

from streamx.engines.partition import (
    ConvertRowError,
    index_location,
    join_location,
    open_output,
    write_partition,
)
from streamx.storage import filesystems

KWARGS = {"columns": {"id": "int64", "vec": "ndarray:float32"}, "keep_local": True}


def test_writes_a_dataset_and_takes_lists_for_ndarray(tmp_path: Any) -> None:
    out = str(tmp_path / "part")
    rows = [{"id": i, "vec": [i, i / 2]} for i in range(5)]
    assert write_partition(rows, out, KWARGS, label="test partition") == 5
    assert index_location(out) == (os.path.join(out, "index.json"), "")
    back = read_streamx(None, out)
    assert [int(s["id"]) for s in back] == list(range(5))
    assert back[3]["vec"].dtype == np.float32 and back[3]["vec"].tolist() == [3.0, 1.5]


def test_bad_row_removes_the_partition_locally_and_remotely(tmp_path: Any, s3: Any) -> None:
    out = join_location((str(tmp_path / "stage"), s3.url("ds")), "00001")
    rows = [{"id": i, "vec": [0.0]} for i in range(3)] + [{"id": "three", "vec": [0.0]}]
    kwargs = dict(KWARGS, size_limit=60)  # shards are uploaded before the bad row
    with pytest.raises(ConvertRowError, match=r"^test partition, row 3: ") as err:
        write_partition(rows, out, kwargs, label="test partition")
    assert err.value.__cause__ is not None
    assert not os.path.exists(out[0])
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix="ds/")


def test_s3_output_without_credentials_is_refused(
    tmp_path: Any, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    filesystems.clear_cache()
    try:
        with pytest.raises(
            PermissionError, match=f"No AWS credentials found to write to s3://{s3.bucket}"
        ):
            open_output(s3.url("ds"), keep_local=False)
    finally:
        filesystems.clear_cache()
