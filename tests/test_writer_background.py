"""MDSWriter's background shard writing and in-place framing, against mosaicml-streaming.

Finished shards are hashed, compressed and written by a Rust thread while ``write`` goes on;
numpy arrays and large bytes are framed straight into the shard buffer. The files must stay
byte-identical to mosaicml-streaming's, failures in the background must surface on the next
call, and no shard file may ever be visible half-written.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from streamx.exceptions import UploadFailedError

streaming = pytest.importorskip("streaming")

HASHES = ["md5", "sha1", "xxh64"]


def _write(
    lib: Any, out: Path, columns: dict[str, str], samples: list[dict[str, Any]], **kw: Any
) -> None:
    with lib.MDSWriter(out=str(out), columns=columns, **kw) as writer:
        for sample in samples:
            writer.write(sample)


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _assert_same(
    tmp_path: Path, columns: dict[str, str], samples: list[dict[str, Any]], **kw: Any
) -> dict[str, bytes]:
    _write(streamx, tmp_path / "x", columns, samples, **kw)
    _write(streaming, tmp_path / "m", columns, samples, **kw)
    ours, theirs = _files(tmp_path / "x"), _files(tmp_path / "m")
    assert list(ours) == list(theirs)
    for name in ours:
        assert ours[name] == theirs[name], name
    return ours


def _arrays(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    grid = rng.integers(0, 1000, (4, 6)).astype(np.int32)
    return {
        "fixed": rng.integers(0, 2**32, 64, dtype=np.uint32),
        "dyn": (rng.standard_normal((i % 3 + 1, 5)) * 9).astype(
            ("uint8", "float64", "int16")[i % 3]
        ),
        "typed": grid[:, ::2] if i % 2 else np.asfortranarray(grid[:, :3]),  # not C-contiguous
        "swapped": np.arange(i + 1, dtype=">i4"),  # big-endian: left to the Python encoder
        "raw": rng.integers(0, 9, 3, dtype=np.int16).tobytes()
        if i % 4 == 0
        else rng.integers(0, 9, 3, dtype=np.int16),
        "blob": rng.bytes(int(rng.integers(0, 70_000))),
        "n": i,
    }


ARRAY_COLUMNS = {
    "fixed": "ndarray:uint32:64",
    "dyn": "ndarray",
    "typed": "ndarray:int32",
    "swapped": "ndarray",
    "raw": "ndarray:int16:3",
    "blob": "bytes",
    "n": "int",
}


@pytest.mark.parametrize("compression", [None, "zstd", "bz2"])
def test_arrays_and_blobs_match_mosaic(tmp_path: Path, compression: str | None) -> None:
    samples = [_arrays(i) for i in range(60)]
    files = _assert_same(
        tmp_path, ARRAY_COLUMNS, samples, compression=compression, hashes=HASHES, size_limit=300_000
    )
    assert len(files) > 5  # several shards, so some were written while others were framed


def test_big_zstd_shard_matches_mosaic(tmp_path: Path) -> None:
    """Beyond one zstd job (a few MiB), libzstd's multithreaded mode differs from its
    single-threaded one; mosaicml-streaming's `zstd` package runs the former."""
    rng = np.random.default_rng(0)
    pool = [rng.integers(0, 50_000, 2048, dtype=np.uint32) for _ in range(64)]
    samples = [{"tokens": pool[(i * 7) % 64]} for i in range(2500)]  # 20 MB in one shard
    _assert_same(
        tmp_path,
        {"tokens": "ndarray:uint32:2048"},
        samples,
        compression="zstd",
        hashes=["xxh64"],
        size_limit=None,
    )


@pytest.mark.parametrize(
    "size_limit",
    [
        1,  # below the header: an empty shard 0, then one shard per sample
        4 + 4 + 4,  # still below header + one sample
        None,
        1 << 16,
    ],
)
def test_size_limit_edges_match_mosaic(tmp_path: Path, size_limit: int | None) -> None:
    samples = [{"b": bytes([i]) * (i * 997 % 5000), "n": i} for i in range(40)]
    _assert_same(tmp_path, {"b": "bytes", "n": "int"}, samples, size_limit=size_limit)


def test_sample_exactly_filling_the_limit(tmp_path: Path) -> None:
    """A sample that brings the shard exactly to the limit stays in it; one byte more and
    the (empty) shard before it is flushed first, as mosaicml-streaming does."""
    probe, limit = tmp_path / "probe", 10_000
    _write(streamx, probe, {"b": "bytes"}, [{"b": b""}], size_limit=limit)
    # The probe shard is count + 2 offsets + config + one 4-byte length: the writer charges
    # 8 + config for a shard and len(sample) + 4 per sample.
    header_charge = (probe / "shard.00000.mds").stat().st_size - 8
    body = limit - header_charge - 8
    for extra, shards in ((0, 2), (1, 3)):
        samples = [{"b": b"x" * (body + extra)}, {"b": b"y"}]
        files = _assert_same(tmp_path / f"edge{extra}", {"b": "bytes"}, samples, size_limit=limit)
        assert len(files) == shards + 1  # and index.json


def test_shards_appear_only_whole(tmp_path: Path) -> None:
    """A thread watching the directory only ever sees complete shard files."""
    out = tmp_path / "out"
    out.mkdir()
    stop = threading.Event()
    seen: dict[str, int] = {}
    bad: list[str] = []

    def watch() -> None:
        while not stop.is_set():
            for path in out.glob("shard.*.mds"):
                data = path.read_bytes()
                count = int.from_bytes(data[:4], "little")
                end = int.from_bytes(data[4 + 4 * count : 8 + 4 * count], "little")
                if end != len(data):
                    bad.append(path.name)
                seen[path.name] = len(data)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with streamx.MDSWriter(
            out=str(out), columns={"b": "bytes"}, size_limit=1 << 20, exist_ok=True
        ) as writer:
            for i in range(400):
                writer.write({"b": bytes([i % 256]) * 60_000})
    finally:
        stop.set()
        watcher.join()
    assert not bad
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]
    assert len(list(out.glob("shard.*.mds"))) == 24


def _blocked(out: Path, shard: int) -> None:
    """Makes the final name of one shard unusable: a non-empty directory is in the way."""
    (out / f"shard.{shard:05}.mds").mkdir(parents=True)
    (out / f"shard.{shard:05}.mds" / "keep").write_text("x")


def test_background_failure_surfaces_on_next_call(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer = streamx.MDSWriter(out=str(out), columns={"b": "bytes"}, size_limit=100_000)
    _blocked(out, 1)
    with pytest.raises(OSError, match=r"shard\.00001\.mds") as caught:
        for i in range(200):
            writer.write({"b": bytes([i]) * 30_000})
        writer.finish()
    # Every later call raises the same failure, and no index is written.
    with pytest.raises(OSError, match=r"shard\.00001\.mds"):
        writer.write({"b": b"x"})
    with pytest.raises(OSError, match=r"shard\.00001\.mds"):
        writer.finish()
    assert caught.value is not None
    assert not (out / "index.json").exists()
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]
    # Shard 0 was written whole; nothing after the failure was.
    assert (out / "shard.00000.mds").stat().st_size > 90_000
    assert not (out / "shard.00002.mds").exists()


def test_background_failure_on_finish(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer = streamx.MDSWriter(out=str(out), columns={"n": "int"})
    writer.write({"n": 1})
    _blocked(out, 0)
    with pytest.raises(OSError, match=r"shard\.00000\.mds"):
        writer.finish()
    assert not (out / "index.json").exists()


def _fail_inside_with_block(out: Path) -> None:
    with streamx.MDSWriter(out=str(out), columns={"n": "int"}) as writer:
        writer.write({"n": 1})
        _blocked(out, 0)
        raise RuntimeError("user code failed")


def test_failure_inside_with_block_keeps_callers_error(tmp_path: Path) -> None:
    with (
        pytest.warns(UserWarning, match="Could not finish"),
        pytest.raises(RuntimeError, match="user"),
    ):
        _fail_inside_with_block(tmp_path / "out")


def test_upload_failure_cancels_but_keeps_local_shards(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """exception_callback marks the writer; the next write cancels what is queued and raises,
    and shards already closed are still on disk, whole (mosaic writes them synchronously)."""
    out = tmp_path / "out"
    writer = streamx.MDSWriter(out=str(out), columns={"b": "bytes"}, size_limit=100_000)
    for i in range(20):
        writer.write({"b": bytes([i]) * 30_000})
    failed: Future[None] = Future()
    failed.set_exception(OSError("bucket gone"))
    with caplog.at_level(logging.ERROR):
        writer.exception_callback(failed)
    with pytest.raises(UploadFailedError, match="One of the threads failed"):
        writer.write({"b": b"x"})
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"shard.{i:05}.mds" for i in range(6)]
    assert [s["samples"] for s in writer.shards] == [3] * 6
    for name in names:
        data = (out / name).read_bytes()
        assert int.from_bytes(data[16:20], "little") == len(data)  # 3 samples: offsets[3]
    with pytest.raises(UploadFailedError):
        writer.finish()


def test_pending_bytes_and_counts(tmp_path: Path) -> None:
    """encode_joint_shard still shows the shard being built, whatever is in flight."""
    out = tmp_path / "out"
    writer = streamx.MDSWriter(out=str(out), columns={"a": "ndarray:uint8:4"}, size_limit=200)
    for i in range(30):
        writer.write({"a": np.full(4, i, np.uint8)})
    pending = writer.encode_joint_shard()
    writer.finish()
    shards = sorted(out.glob("shard.*.mds"))
    assert shards[-1].read_bytes() == pending
    assert sum(s["samples"] for s in writer.shards) == 30
    assert os.path.exists(out / "index.json")
