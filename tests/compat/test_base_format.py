"""``streamx.base.format``: per-shard readers, encodings and writers against
mosaicml-streaming's ``streaming.base.format``."""

from __future__ import annotations

import inspect
import json
import os
import shutil
from typing import Any

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("streaming")
import streaming.base.format as their_format
import streaming.base.format.json.encodings as their_json_enc
import streaming.base.format.mds.encodings as their_mds_enc
import streaming.base.format.xsv.encodings as their_xsv_enc
from streaming.base.format.json.reader import JSONReader

import streamx
import streamx.base.format as fmt
import streamx.base.format.json.encodings as json_enc
import streamx.base.format.mds.encodings as mds_enc
import streamx.base.format.xsv.encodings as xsv_enc
import streamx.format.encodings

pytestmark = pytest.mark.compat

MDS_COLUMNS = {"id": "int", "text": "str", "arr": "ndarray:int16", "img": "png", "obj": "pkl"}


def _mds_sample(i: int) -> dict[str, Any]:
    pixels = np.full((4, 5, 3), i * 9 % 256, np.uint8)
    return {
        "id": i,
        "text": f"sample {i}" * (i % 4),
        "arr": np.arange(1 + i % 7, dtype=np.int16),
        "img": Image.fromarray(pixels),
        "obj": {"i": i, "tags": ["a"] * (i % 3)},
    }


def _write(root: str, kind: str) -> str:
    out = os.path.join(root, kind)
    if kind == "mds":
        with streamx.MDSWriter(out=out, columns=MDS_COLUMNS, size_limit=600) as writer:
            for i in range(25):
                writer.write(_mds_sample(i))
        return out
    columns = {"id": "int", "word": "str", "score": "float"}
    writers = {"json": streamx.JSONWriter, "csv": streamx.CSVWriter, "tsv": streamx.TSVWriter}
    with writers[kind](out=out, columns=columns, size_limit=120) as writer:
        for i in range(25):
            writer.write({"id": i, "word": f"w{i}", "score": i / 4})
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b) and a.dtype == b.dtype
    if isinstance(a, Image.Image):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("kind", ["mds", "json", "csv", "tsv"])
def test_readers_match_mosaic(tmp_path: Any, kind: str) -> None:
    root = _write(str(tmp_path), kind)
    with open(os.path.join(root, "index.json")) as file:
        entries = json.load(file)["shards"]
    assert len(entries) > 1
    for entry in entries:
        ours = fmt.reader_from_json(root, None, entry)
        theirs = their_format.reader_from_json(root, None, entry)
        assert type(ours).__name__ == type(theirs).__name__
        fields = ["dirname", "split", "compression", "hashes", "samples", "size_limit"]
        fields += {"mds": ["column_names", "column_encodings", "column_sizes"]}.get(kind, [])
        fields += {"json": ["columns", "newline"]}.get(kind, [])
        fields += ["column_names", "column_encodings", "newline"] if kind in ("csv", "tsv") else []
        for name in fields:
            assert getattr(ours, name) == getattr(theirs, name), name
        # The same files (mosaic lists a split shard's meta file first, streamx its data).
        assert sorted((r.basename, r.bytes, z) for r, z in ours.file_pairs) == sorted(
            (r.basename, r.bytes, z) for r, z in theirs.file_pairs
        )
        assert (len(ours), ours.size, ours.samples) == (len(theirs), theirs.size, theirs.samples)
        assert ours.get_raw_size() == theirs.get_raw_size()
        assert ours.get_zip_size() == theirs.get_zip_size()
        assert ours.get_max_size() == theirs.get_max_size()
        for keep_zip in (False, True):
            assert ours.get_persistent_size(keep_zip) == theirs.get_persistent_size(keep_zip)
        for i in range(len(theirs)):
            assert _same(ours[i], theirs[i])
            if kind == "mds":
                assert ours.get_sample_data(i) == theirs.get_sample_data(i)
        assert all(_same(a, b) for a, b in zip(ours[-3:], theirs[-3:]))
        assert _same(ours[-1], theirs[-1])
        with pytest.raises(IndexError):
            ours[len(theirs)]


def test_validate_refuses_unsafe_types_like_mosaic(tmp_path: Any) -> None:
    root = _write(str(tmp_path), "mds")
    with open(os.path.join(root, "index.json")) as file:
        entry = json.load(file)["shards"][0]
    for reader in (
        fmt.reader_from_json(root, None, entry),
        their_format.reader_from_json(root, None, entry),
    ):
        reader.validate(True)
        with pytest.raises(ValueError, match="Column obj contains an unsafe type: pkl"):
            reader.validate(False)


def test_evict_frees_the_same_bytes(tmp_path: Any) -> None:
    root = _write(str(tmp_path), "json")
    copy = str(tmp_path / "copy")
    shutil.copytree(root, copy)
    with open(os.path.join(root, "index.json")) as file:
        entry = json.load(file)["shards"][0]
    ours = fmt.reader_from_json(root, None, entry)
    theirs = their_format.reader_from_json(copy, None, entry)
    assert ours.evict() == theirs.evict() > 0
    assert not os.path.exists(os.path.join(root, entry["raw_data"]["basename"]))
    with pytest.raises(FileNotFoundError):
        ours[0]


def test_reader_from_json_rejects_bad_entries(tmp_path: Any) -> None:
    root = _write(str(tmp_path), "mds")
    with open(os.path.join(root, "index.json")) as file:
        entry = json.load(file)["shards"][0]
    with pytest.raises(ValueError, match="version"):
        fmt.reader_from_json(root, None, {**entry, "version": 3})
    with pytest.raises(KeyError):
        fmt.reader_from_json(root, None, {**entry, "format": "parquet"})
    with pytest.raises(ValueError, match="escapes"):
        bad = {**entry, "raw_data": {**entry["raw_data"], "basename": "../../etc/passwd"}}
        fmt.reader_from_json(root, None, bad)


def test_compressed_mds_shards_read_through(tmp_path: Any) -> None:
    out = str(tmp_path / "z")
    with streamx.MDSWriter(out=out, columns={"id": "int"}, compression="zstd:5") as writer:
        for i in range(10):
            writer.write({"id": i})
    with open(os.path.join(out, "index.json")) as file:
        entry = json.load(file)["shards"][0]
    reader = fmt.reader_from_json(out, None, entry)
    assert reader.compression == "zstd:5"
    assert [reader[i]["id"] for i in range(10)] == list(range(10))


def test_encoding_table_is_streamx_own() -> None:
    assert mds_enc._encodings is streamx.format.encodings._encodings
    assert mds_enc.get_mds_encodings() == their_mds_enc.get_mds_encodings()
    for name in sorted(their_mds_enc.get_mds_encodings()):
        assert mds_enc.is_mds_encoding(name)
        assert mds_enc.is_mds_encoding_safe(name) == their_mds_enc.is_mds_encoding_safe(name)
        assert mds_enc.get_mds_encoded_size(name) == their_mds_enc.get_mds_encoded_size(name)
    for name in ("uint8", "float64", "str_int", "jpeg", "ndarray:float32:2,2"):
        assert mds_enc.is_mds_encoding(name) == their_mds_enc.is_mds_encoding(name)


@pytest.mark.parametrize(
    ("encoding", "value"),
    [("int", 5), ("str", "héllo"), ("float64", np.float64(2.5)), ("uint16", np.uint16(9))],
)
def test_mds_encode_decode_across_libraries(encoding: str, value: Any) -> None:
    ours = mds_enc.mds_encode(encoding, value)
    assert ours == their_mds_enc.mds_encode(encoding, value)
    assert mds_enc.mds_decode(encoding, ours) == their_mds_enc.mds_decode(encoding, ours)


class Complex128(mds_enc.Encoding):
    """The custom encoding of mosaic's dataset conversion guide."""

    def encode(self, obj: Any) -> bytes:
        return np.complex128(obj).tobytes()

    def decode(self, data: bytes) -> Any:
        return np.frombuffer(data, np.complex128)[0]


def test_custom_encoding_registered_through_base_works_end_to_end(tmp_path: Any) -> None:
    mds_enc._encodings["complex128"] = Complex128
    try:
        out = str(tmp_path / "c")
        with streamx.MDSWriter(out=out, columns={"z": "complex128"}) as writer:
            for i in range(5):
                writer.write({"z": complex(i, -i)})
        ds = streamx.StreamingDataset(local=out, batch_size=1)
        assert [ds[i]["z"] for i in range(5)] == [complex(i, -i) for i in range(5)]
    finally:
        del mds_enc._encodings["complex128"]


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except Exception as err:
        return (type(err).__name__, None)


XSV_CASES = [("int", 3), ("int", "3"), ("str", "a"), ("str", 4), ("float", 1.5), ("float", 2)]
XSV_CASES += [("bytes", b"x")]


@pytest.mark.parametrize(("encoding", "value"), XSV_CASES)
def test_xsv_and_json_encodings_match(encoding: str, value: Any) -> None:
    assert xsv_enc.is_xsv_encoding(encoding) == their_xsv_enc.is_xsv_encoding(encoding)
    assert _outcome(xsv_enc.xsv_encode, encoding, value) == _outcome(
        their_xsv_enc.xsv_encode, encoding, value
    )
    text = str(value)
    assert _outcome(xsv_enc.xsv_decode, encoding, text) == _outcome(
        their_xsv_enc.xsv_decode, encoding, text
    )
    assert json_enc.is_json_encoding(encoding) == their_json_enc.is_json_encoding(encoding)
    assert _outcome(json_enc.is_json_encoded, encoding, value) == _outcome(
        their_json_enc.is_json_encoded, encoding, value
    )


def test_index_basename_and_writer_bases() -> None:
    from streamx.base.format.base.writer import JointWriter, SplitWriter

    assert fmt.get_index_basename() == their_format.get_index_basename() == "index.json"
    assert issubclass(streamx.MDSWriter, JointWriter)
    assert issubclass(streamx.JSONWriter, SplitWriter)
    assert issubclass(streamx.CSVWriter, SplitWriter)


@pytest.mark.parametrize("kind", ["mds", "json", "csv", "tsv"])
def test_reader_constructors_take_mosaics_arguments(tmp_path: Any, kind: str) -> None:
    root = _write(str(tmp_path), kind)
    with open(os.path.join(root, "index.json")) as file:
        entry = json.load(file)["shards"][0]
    theirs = their_format.reader_from_json(root, None, entry)
    names = {"mds": "MDSReader", "json": "JSONReader", "csv": "CSVReader", "tsv": "TSVReader"}
    module = {"mds": "mds", "json": "json", "csv": "xsv", "tsv": "xsv"}[kind]
    ours_cls = getattr(__import__(f"streamx.base.format.{module}", fromlist=["_"]), names[kind])
    their_cls = type(theirs)
    # Keyword arguments taken from mosaic's own reader; its FileInfo objects pass as they are.
    params = list(inspect.signature(their_cls.__init__).parameters)[1:]
    kwargs = {name: getattr(theirs, name) for name in params if name not in ("dirname", "split")}
    if kind == "json":
        assert isinstance(theirs, JSONReader)
        kwargs["columns"] = theirs.columns
    ours = ours_cls(root, None, **kwargs)
    assert len(ours) == len(theirs)
    for i in range(len(theirs)):
        assert _same(ours[i], theirs[i])
    with pytest.raises(TypeError, match="abstract"):
        fmt.Reader(root, None, None, [], 1, None)
