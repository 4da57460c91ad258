"""MDSWriter's fast paths against mosaicml-streaming: numpy arrays read straight from their
memory, large ``bytes`` values held by reference until their shard is written, and shard
buffers reused from shard to shard. Every file must stay byte-identical to mosaic's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from streamx.exceptions import ColumnValueError

streaming = pytest.importorskip("streaming")

HELD = 32 << 10  # bytes values from this size on are held by reference
DTYPES = [
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
]


def _write(
    lib: Any, out: Path, columns: dict[str, str], samples: list[dict[str, Any]], **kw: Any
) -> None:
    with lib.MDSWriter(out=str(out), columns=columns, **kw) as writer:
        for sample in samples:
            writer.write(sample)


def _assert_same(
    tmp_path: Path, columns: dict[str, str], samples: list[dict[str, Any]], **kw: Any
) -> int:
    _write(streamx, tmp_path / "x", columns, samples, **kw)
    _write(streaming, tmp_path / "m", columns, samples, **kw)
    ours = sorted(p.name for p in (tmp_path / "x").iterdir())
    assert ours == sorted(p.name for p in (tmp_path / "m").iterdir())
    for name in ours:
        assert (tmp_path / "x" / name).read_bytes() == (tmp_path / "m" / name).read_bytes(), name
    return len(ours) - 1


def _blobs(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    sizes = (HELD - 1, HELD, HELD + 1, 5, 0, 150_000)
    return {
        "a": rng.bytes(sizes[i % 6]),
        "b": rng.bytes(sizes[(i + 3) % 6]),
        "fixed": rng.bytes(HELD),  # a fixed-size column given its bytes
        "text": rng.bytes(sizes[(i + 1) % 6]),  # pre-encoded str
        "n": i,
    }


BLOB_COLUMNS = {
    "a": "bytes",
    "b": "bytes",
    "fixed": "ndarray:uint8:32768",
    "text": "str",
    "n": "int",
}


@pytest.mark.parametrize(
    ("compression", "hashes", "size_limit"),
    [
        (None, [], 200_000),  # a shard every few samples: held values cross every boundary
        (None, ["sha1", "xxh64"], 1 << 20),
        ("zstd", ["md5"], 300_000),
        (None, ["md5"], None),
        (None, [], 1),  # an empty shard 0, then one shard per sample
    ],
)
def test_held_bytes_match_mosaic(
    tmp_path: Path, compression: str | None, hashes: list[str], size_limit: int | None
) -> None:
    samples = [_blobs(i) for i in range(24)]
    shards = _assert_same(
        tmp_path,
        BLOB_COLUMNS,
        samples,
        compression=compression,
        hashes=hashes,
        size_limit=size_limit,
    )
    assert shards >= (1 if size_limit is None else 3)


def test_held_bytes_are_released_after_finish(tmp_path: Path) -> None:
    blob = np.random.default_rng(0).bytes(HELD * 4)
    before = sys.getrefcount(blob)
    writer = streamx.MDSWriter(out=str(tmp_path), columns={"b": "bytes"}, size_limit=1 << 20)
    for _ in range(20):
        writer.write({"b": blob})
    assert sys.getrefcount(blob) > before  # held, not copied
    writer.finish()
    _ = writer._builder.num_samples  # decrefs dropped off the GIL run on the next call
    assert sys.getrefcount(blob) == before


def test_sample_bigger_than_the_limit(tmp_path: Path) -> None:
    samples = [{"b": bytes([i]) * (300_000 if i % 3 == 0 else 10), "n": i} for i in range(12)]
    _assert_same(tmp_path, {"b": "bytes", "n": "int"}, samples, size_limit=100_000)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_matches_mosaic(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(len(dtype))
    columns = {"fixed": f"ndarray:{dtype}:2,3,4", "typed": f"ndarray:{dtype}", "any": "ndarray"}
    samples = [
        {
            "fixed": (rng.standard_normal((2, 3, 4)) * 50).astype(dtype),
            "typed": (rng.standard_normal(i % 5 + 1) * 50).astype(dtype),
            "any": (rng.standard_normal((i % 3 + 1, 2)) * 50).astype(dtype),
        }
        for i in range(40)
    ]
    _assert_same(tmp_path, columns, samples, size_limit=2_000)


def test_arrays_the_fast_path_declines_match_mosaic(tmp_path: Path) -> None:
    grid = np.arange(48, dtype=np.int32).reshape(6, 8)
    samples: list[dict[str, Any]] = [
        {"a": grid[:, ::2]},  # strided
        {"a": np.asfortranarray(grid)},  # Fortran order
        {"a": np.arange(5, dtype=">i4")},  # big-endian
        {"a": np.memmap(tmp_path / "mm", dtype=np.int32, mode="w+", shape=(3,))},  # a subclass
    ]
    _assert_same(tmp_path / "out", {"a": "ndarray"}, samples)


def test_array_changed_after_write_keeps_what_was_written(tmp_path: Path) -> None:
    buf = np.zeros(2048, dtype=np.uint32)
    samples = []
    for i in range(50):
        buf[:] = i  # one array reused for every sample, as a tokenizer loop does
        samples.append({"tokens": buf.copy()})
    _write(streamx, tmp_path / "reused", {"tokens": "ndarray:uint32:2048"}, [], size_limit=1 << 16)
    with streamx.MDSWriter(
        out=str(tmp_path / "x"), columns={"tokens": "ndarray:uint32:2048"}, size_limit=1 << 16
    ) as writer:
        for i in range(50):
            buf[:] = i
            writer.write({"tokens": buf})
    _write(
        streaming, tmp_path / "m", {"tokens": "ndarray:uint32:2048"}, samples, size_limit=1 << 16
    )
    for path in sorted((tmp_path / "m").iterdir()):
        assert (tmp_path / "x" / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (np.zeros(3, np.float32), ColumnValueError, "Wrong dtype"),
        (np.zeros(5, np.int32), ColumnValueError, "Wrong shape"),
        (np.zeros(0, np.int32), ColumnValueError, "0 elements"),
        (np.zeros(4, bool), ColumnValueError, "dtype"),
        (b"\0" * 15, KeyError, "Unexpected data size"),
        ("text", TypeError, "type str"),
    ],
)
def test_bad_values_name_column_and_sample(
    tmp_path: Path, value: Any, error: type[Exception], message: str
) -> None:
    columns = {"arr": "ndarray:int32:4", "n": "int"}
    good = {"arr": np.zeros(4, np.int32), "n": 1}
    with streamx.MDSWriter(out=str(tmp_path / "x"), columns=columns) as writer:
        for _ in range(3):
            writer.write(good)
        with pytest.raises(error, match=message) as caught:
            writer.write({"arr": value, "n": 2})
        assert "'arr'" in str(caught.value)
        assert "sample 3" in str(caught.value)
        writer.write(good)  # the failed sample left nothing behind
    with streaming.MDSWriter(out=str(tmp_path / "m"), columns=columns) as theirs:
        for _ in range(4):
            theirs.write(good)
        expected: dict[type[Exception], type[Exception] | tuple[type[Exception], ...]] = {
            ColumnValueError: ValueError,
            TypeError: (TypeError, AttributeError),
        }
        with pytest.raises(expected.get(error, error)):
            theirs.write({"arr": value, "n": 2})
    for name in ("index.json", "shard.00000.mds"):
        assert (tmp_path / "x" / name).read_bytes() == (tmp_path / "m" / name).read_bytes()
