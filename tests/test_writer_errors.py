"""MDSWriter argument and value checks, with mosaicml-streaming's exception types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamx


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Invalid compression"):
        streamx.MDSWriter(out=str(tmp_path / "a"), columns={"x": "int"}, compression="zip")
    with pytest.raises(ValueError, match="sorted order"):
        streamx.MDSWriter(out=str(tmp_path / "b"), columns={"x": "int"}, hashes=["sha1", "md5"])
    with pytest.raises(ValueError, match="less than 2\\*\\*32"):
        streamx.MDSWriter(out=str(tmp_path / "c"), columns={"x": "int"}, size_limit=2**32)
    with pytest.raises(ValueError, match="Invalid Writer argument"):
        streamx.MDSWriter(out=str(tmp_path / "d"), columns={"x": "int"}, bogus=1)
    with pytest.raises(TypeError, match="MDSWriter passed column `x`"):
        streamx.MDSWriter(out=str(tmp_path / "e"), columns={"x": "nope"})


def test_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "junk").write_text("x")
    with pytest.raises(FileExistsError, match="Directory is not empty"):
        streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"})
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"}, exist_ok=True) as writer:
        writer.write({"x": 1})
    assert not (tmp_path / "junk").exists()


def test_wrong_value_types(tmp_path: Path) -> None:
    with streamx.MDSWriter(
        out=str(tmp_path), columns={"s": "str", "n": "int", "v": "ndarray:int32:2"}
    ) as writer:
        with pytest.raises(AttributeError, match="data should be of type"):
            writer.write({"s": 5, "n": 1, "v": np.zeros(2, np.int32)})
        with pytest.raises(AttributeError, match="data should be of type"):
            writer.write({"s": "a", "n": "1", "v": np.zeros(2, np.int32)})
        with pytest.raises(ValueError, match="Wrong shape"):
            writer.write({"s": "a", "n": 1, "v": np.zeros(3, np.int32)})
        with pytest.raises(KeyError, match="Unexpected data size"):
            writer.write({"s": "a", "n": 1, "v": b"123"})
        with pytest.raises(KeyError):
            writer.write({"s": "a"})
        writer.write({"s": "ok", "n": 2**63 - 1, "v": np.arange(2, dtype=np.int32)})
    ds = streamx.LocalDataset(str(tmp_path))
    assert len(ds) == 1 and ds[0]["n"] == 2**63 - 1


def test_int_overflow_is_reported(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"n": "int", "b": "uint8"}) as writer:
        with pytest.raises(OverflowError):
            writer.write({"n": 2**63, "b": 1})
        with pytest.raises(OverflowError):
            writer.write({"n": 1, "b": 256})


def test_index_written_after_error_in_with_block(tmp_path: Path) -> None:
    """What was written before an exception is kept and readable: nothing written is lost."""
    with (
        pytest.raises(RuntimeError),
        streamx.MDSWriter(out=str(tmp_path), columns={"n": "int"}) as writer,
    ):
        writer.write({"n": 1})
        raise RuntimeError("user code failed")
    assert streamx.LocalDataset(str(tmp_path))[0]["n"] == 1
