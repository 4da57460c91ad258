"""Tar members grouped into samples as WebDataset groups them (webdataset itself is the
oracle), and fields decoded by extension."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from wds_data import add, fields, tar_bytes

from streamx import StreamingDataset, WebDatasetStream
from streamx.exceptions import CorruptShardError


def _dataset(remote: Path, local: Path, **kwargs: Any) -> StreamingDataset:
    return StreamingDataset(
        streams=[WebDatasetStream(remote=str(remote), local=str(local), **kwargs)]
    )


def _awkward_tar(path: Path) -> None:
    """Keys with folders and dots, upper-case extensions, metadata and dot-less files, a key
    that comes back after another, and empty fields."""
    with tarfile.open(path, "w") as tar:
        add(tar, "__index__", b"metadata, not a sample")
        add(tar, "README", b"no dot: not a field")
        add(tar, "train/a/0001.jpg", b"\xff\xd8 not really")
        add(tar, "train/a/0001.seg.PNG", b"png?")
        add(tar, "train/a/0001.json", b"[1, 2]")
        add(tar, "train/b.v2/0002.txt", b"")
        add(tar, "train/b.v2/0002.cls", b"7")
        add(tar, "x.tar.gz.bin", b"key x, field tar.gz.bin")
        add(tar, "train/a/0001.txt", b"the same key again: a new sample")


def test_grouping_matches_webdataset(tmp_path: Path) -> None:
    wds = pytest.importorskip("webdataset")
    path = tmp_path / "src" / "awkward.tar"
    path.parent.mkdir()
    _awkward_tar(path)
    theirs = [
        {k: v for k, v in s.items() if k == "__key__" or not k.startswith("__")}
        for s in wds.WebDataset(str(path), shardshuffle=False)
    ]
    ds = _dataset(path.parent, tmp_path / "c", decode=False)
    ours = [{k: v for k, v in ds[i].items() if k != "__url__"} for i in range(len(ds))]
    assert ours == theirs
    assert len(ours) == 4 and ours[0]["seg.png"] == b"png?"
    assert ds[0]["__url__"] == str(path)


def test_fields_decode_by_extension(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "s.tar").write_bytes(tar_bytes(range(5)))
    ds = _dataset(tmp_path / "src", tmp_path / "c")
    for i in range(5):
        sample, raw = ds[i], fields(i)
        assert sample["__key__"] == f"sample-{i:05d}"
        assert sample["cls"] == i
        assert sample["json"] == {"id": i, "tags": ["a"] * (i % 3)}
        assert sample["txt"] == f"row {i}"
        want = np.load(io.BytesIO(raw["npy"]))
        assert sample["npy"].dtype == np.int32 and np.array_equal(sample["npy"], want)
        assert sample["seg.bin"] == raw["seg.bin"]


def test_images_as_pil_when_asked(tmp_path: Path) -> None:
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (4, 3), (10, 20, 30)).save(png, format="PNG")
    (tmp_path / "src").mkdir()
    with tarfile.open(tmp_path / "src" / "img.tar", "w") as tar:
        add(tar, "k.png", png.getvalue())
        add(tar, "k.pyd", b"\x80\x04K\x01.")  # a pickle: never unpickled
    plain = _dataset(tmp_path / "src", tmp_path / "c1")[0]
    assert plain["png"] == png.getvalue() and plain["pyd"] == b"\x80\x04K\x01."
    image = _dataset(tmp_path / "src", tmp_path / "c2", decode_images=True)[0]["png"]
    assert image.size == (4, 3) and image.convert("RGB").getpixel((0, 0)) == (10, 20, 30)


def test_a_field_twice_in_one_sample_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with tarfile.open(tmp_path / "src" / "dup.tar", "w") as tar:
        add(tar, "k.txt", b"one")
        add(tar, "k.TXT", b"two")
    with pytest.raises(CorruptShardError, match=r"dup\.tar: the sample 'k' holds 'txt' twice"):
        _dataset(tmp_path / "src", tmp_path / "c")


def test_a_field_that_does_not_decode_names_tar_sample_and_field(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with tarfile.open(tmp_path / "src" / "bad.tar", "w") as tar:
        add(tar, "ok.json", b"{}")
        add(tar, "k7.json", b"{not json")
    ds = _dataset(tmp_path / "src", tmp_path / "c")
    assert ds[0]["json"] == {}
    with pytest.raises(
        CorruptShardError, match=r"bad\.tar, sample 'k7', field 'json': not a valid"
    ):
        ds[1]


def _npy(array: np.ndarray[Any, Any], **kwargs: Any) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, **kwargs)
    return buf.getvalue()


def test_npy_fields_read_as_numpy_reads_them(tmp_path: Path) -> None:
    fortran = np.asfortranarray(np.arange(12, dtype=np.float16).reshape(3, 4))
    wide = np.zeros((2, 3), dtype=[("a", "<i4"), ("b", "<f8")])
    big_header = np.arange(6, dtype=np.int64).reshape(1, 1, 1, 2, 3)
    arrays = [fortran, wide, big_header, np.array(7, dtype=np.uint8), np.zeros((0, 5))]
    (tmp_path / "src").mkdir()
    with tarfile.open(tmp_path / "src" / "n.tar", "w") as tar:
        for i, array in enumerate(arrays):
            add(tar, f"a{i}.npy", _npy(array))
        add(tar, "v2.npy", _npy(np.arange(3))[:6] + b"\x02\x00" + _v2_tail(np.arange(3)))
    ds = _dataset(tmp_path / "src", tmp_path / "c")
    for i, array in enumerate(arrays):
        got = ds[i]["npy"]
        assert got.dtype == array.dtype and got.shape == array.shape
        assert np.array_equal(got, array) and got.flags.writeable
    assert ds[1]["npy"]["b"].tolist() == [[0.0] * 3] * 2
    assert ds[len(arrays)]["npy"].tolist() == [0, 1, 2]


def _v2_tail(array: np.ndarray[Any, Any]) -> bytes:
    """A version 2.0 header (4-byte length) and data, as numpy writes past 65535 bytes."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=(2, 0))  # type: ignore[no-untyped-call]
    return buf.getvalue()[8:]


def test_bad_npy_fields_are_named(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with tarfile.open(tmp_path / "src" / "b.tar", "w") as tar:
        add(tar, "obj.npy", _npy(np.array([{"x": 1}], dtype=object), allow_pickle=True))
        add(tar, "cut.npy", _npy(np.arange(100))[:-8])
    ds = _dataset(tmp_path / "src", tmp_path / "c")
    with pytest.raises(CorruptShardError, match=r"sample 'obj', field 'npy': not a valid \.npy"):
        ds[0]
    with pytest.raises(CorruptShardError, match=r"sample 'cut', field 'npy': not a valid \.npy"):
        ds[1]
