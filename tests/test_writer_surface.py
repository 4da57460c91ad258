"""mosaicml-streaming 0.13.0's writer surface: signatures, flush_shard, encode_*_shard,
job callbacks, CSV/TSV separators, and the errors and warnings a sample can raise."""

from __future__ import annotations

import inspect
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import streaming

import streamx
from streamx.exceptions import ColumnTypeError, ColumnValueError, UploadFailedError
from streamx.format.writers.split import SplitWriter

SHARED = (
    "out",
    "keep_local",
    "compression",
    "hashes",
    "size_limit",
    "progress_bar",
    "max_workers",
    "retry",
    "exist_ok",
)
WRITERS: dict[type, dict[str, Any]] = {
    streamx.MDSWriter: {"columns": {"x": "int"}},
    streamx.JSONWriter: {"columns": {"x": "int"}},
    streamx.CSVWriter: {"columns": {"x": "int"}},
    streamx.TSVWriter: {"columns": {"x": "int"}},
    streamx.XSVWriter: {"columns": {"x": "int"}, "separator": "|"},
}


@pytest.mark.parametrize("cls", list(WRITERS), ids=lambda c: c.__name__)
def test_signature_and_docs_name_every_argument(cls: type) -> None:
    params = inspect.signature(cls).parameters
    doc = inspect.getdoc(cls) or ""
    for name in (*SHARED, *WRITERS[cls]):
        assert name in params, name
        assert f"{name}:" in doc, name
    assert "Raises:" in doc
    assert "Examples:" in doc
    assert "<writer arguments>" not in doc


@pytest.mark.parametrize("cls", list(WRITERS), ids=lambda c: c.__name__)
def test_flush_shard_starts_a_new_shard(cls: type, tmp_path: Path) -> None:
    with cls(out=str(tmp_path), **WRITERS[cls]) as writer:
        for i in range(3):
            writer.write({"x": i})
        writer.flush_shard()
        writer.flush_shard()  # nothing pending: no empty shard
        for i in range(3, 5):
            writer.write({"x": i})
    assert [shard["samples"] for shard in writer.shards] == [3, 2]
    dataset = streamx.LocalDataset(str(tmp_path))
    assert [int(dataset[i]["x"]) for i in range(5)] == list(range(5))


def test_encode_joint_shard_is_the_shard_file_mosaic_writes(tmp_path: Path) -> None:
    columns = {"x": "int", "s": "str"}
    samples = [{"x": i, "s": "v" * i} for i in range(7)]
    writer = streamx.MDSWriter(out=str(tmp_path / "a"), columns=columns)
    with writer:  # (``__enter__`` is typed as returning the base ``Writer``)
        for sample in samples:
            writer.write(sample)
        pending = writer.encode_joint_shard()
    with streaming.MDSWriter(out=str(tmp_path / "b"), columns=columns) as theirs:
        for sample in samples:
            theirs.write(sample)
        assert theirs.encode_joint_shard() == pending
    assert (tmp_path / "a" / "shard.00000.mds").read_bytes() == pending


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (streamx.CSVWriter, streaming.CSVWriter),
        (streamx.JSONWriter, streaming.JSONWriter),
    ],
)
def test_encode_split_shard_matches_mosaic(
    ours: type[SplitWriter], theirs: type, tmp_path: Path
) -> None:
    columns = {"x": "int", "s": "str"}
    samples = [{"x": i, "s": "v" * i} for i in range(7)]
    writer = ours(out=str(tmp_path / "a"), columns=columns)
    with writer:
        for sample in samples:
            writer.write(sample)
        pending = writer.encode_split_shard()
    with theirs(out=str(tmp_path / "b"), columns=columns) as other:
        for sample in samples:
            other.write(sample)
        assert other.encode_split_shard() == pending
    name = f"shard.00000.{ours.format}"
    assert (tmp_path / "a" / name).read_bytes() == pending[0]
    assert (tmp_path / "a" / f"{name}.meta").read_bytes() == pending[1]


def test_fixed_separators_are_class_attributes() -> None:
    assert streamx.CSVWriter.separator == streaming.CSVWriter.separator == ","
    assert streamx.TSVWriter.separator == streaming.TSVWriter.separator == "\t"


def test_failed_job_stops_the_writer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    writer = streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"})
    writer.write({"x": 1})
    done: Future[None] = Future()
    done.set_result(None)
    writer.exception_callback(done)
    assert not writer.event.is_set()
    failed: Future[None] = Future()
    failed.set_exception(OSError("bucket gone"))
    writer.exception_callback(failed)
    assert writer.event.is_set()
    assert "bucket gone" in caplog.text
    with pytest.raises(UploadFailedError, match="One of the threads failed"):
        writer.write({"x": 2})
    with pytest.raises(UploadFailedError):
        writer.finish()
    writer.cancel_future_jobs()  # idempotent after the failure


def test_wrong_type_names_column_encoding_and_type(tmp_path: Path) -> None:
    columns = {"n": "int", "s": "str", "a": "ndarray:int32:2", "f": "float32"}
    good = {"n": 1, "s": "x", "a": np.zeros(2, np.int32), "f": 1.5}
    with streamx.MDSWriter(out=str(tmp_path / "mds"), columns=columns) as writer:
        with pytest.raises(ColumnTypeError, match="Column 'n' has encoding 'int'.*type str"):
            writer.write({**good, "n": "1"})
        with pytest.raises(AttributeError, match="Column 's' has encoding 'str'.*type int"):
            writer.write({**good, "s": 5})
        with pytest.raises(ColumnValueError, match="Column 'a' has encoding 'ndarray:int32:2'"):
            writer.write({**good, "a": np.zeros(3, np.int32)})
        with pytest.raises(ColumnValueError, match="Column 'f' has encoding 'float32'.*str"):
            writer.write({**good, "f": "abc"})
        writer.write(good)
    json_writer = streamx.JSONWriter(out=str(tmp_path / "json"), columns={"n": "int"})
    with pytest.raises(TypeError, match="Column 'n' has encoding 'int'.*type str"):
        json_writer.write({"n": "1"})
    json_writer.finish()


@pytest.mark.parametrize("cls", list(WRITERS), ids=lambda c: c.__name__)
def test_extra_keys_warn_once_and_are_dropped(cls: type, tmp_path: Path) -> None:
    with cls(out=str(tmp_path), **WRITERS[cls]) as writer:
        with pytest.warns(UserWarning, match=r"not columns: \['extra', 'more'\]"):
            writer.write({"x": 1, "extra": 2, "more": 3})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            writer.write({"x": 2, "other": 3})
    dataset = streamx.LocalDataset(str(tmp_path))
    assert set(dataset[0]) == {"x"}
