"""mosaicml-streaming's Stream and StreamingDataset members on local data, with the installed
mosaicml-streaming as the oracle: stream weights, ``set_up_local``, ``spanner``, ``on_exception``,
and shard operations on a stream without a remote (whose files are never deleted)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from streamx.format.index_entry import ShardInfo

streaming = pytest.importorskip("streaming")

N = 60


def _write(out: Path, compression: str | None) -> Path:
    with streamx.MDSWriter(
        out=str(out),
        columns={"id": "int", "blob": "bytes"},
        compression=compression,
        size_limit=900,
    ) as writer:
        for i in range(N):
            writer.write({"id": i, "blob": bytes([i % 251]) * (40 + i)})
    return out


WEIGHTS: list[tuple[list[dict[str, Any]], int | None]] = [
    ([{"proportion": 0.3}, {"proportion": 1.2}, {"proportion": 0.5}], None),
    ([{"proportion": 0.3}, {"proportion": 1.2}, {"proportion": 0.5}], 1001),
    ([{"repeat": 1.5}, {"choose": 7}, {}], None),
    ([{}, {}, {}], None),
    ([{}, {}, {}], 999),
]


@pytest.mark.parametrize(("weights", "epoch_size"), WEIGHTS)
def test_apply_weights_matches_mosaic(
    weights: list[dict[str, Any]], epoch_size: int | None
) -> None:
    samples = np.array([120, 45, 333], np.int64)
    ours = [streamx.Stream(local=f"/x{i}", **w) for i, w in enumerate(weights)]
    for seed in (0, 9176):  # ours are reused: weighted from what was given each time
        theirs = [streaming.Stream(local=f"/x{i}", **w) for i, w in enumerate(weights)]
        got = streamx.Stream.apply_weights(ours, samples, epoch_size, seed)
        want = streaming.Stream.apply_weights(theirs, samples, epoch_size, seed)
        assert got == want
        for a, b in zip(ours, theirs):
            assert (a.proportion, a.repeat, a.choose) == (b.proportion, b.repeat, b.choose)


@pytest.mark.parametrize(
    ("weights", "epoch_size", "message"),
    [
        ([{"proportion": 1.0}, {"repeat": 2.0}], None, "incompatible with each other"),
        ([{"repeat": 1.0}, {}], 50, "Only provide `choose` when weighting streams relatively"),
    ],
)
def test_weight_errors_match_mosaic(
    weights: list[dict[str, Any]], epoch_size: int | None, message: str
) -> None:
    samples = np.array([10, 20], np.int64)
    for module in (streamx, streaming):
        streams = [module.Stream(local=f"/y{i}", **w) for i, w in enumerate(weights)]
        with pytest.raises(ValueError, match=message):
            module.Stream.apply_weights(streams, samples, epoch_size, 0)


def test_validate_weights_is_a_classmethod_subclasses_may_override() -> None:
    calls = []

    class Logged(streamx.Stream):
        @classmethod
        def validate_weights(cls, streams: Any) -> tuple[bool, bool]:
            calls.append(len(streams))
            return super().validate_weights(streams)

    streams = [Logged(local="/z", proportion=1.0)]
    assert streamx.Stream.validate_weights(streams) == (True, False)
    assert Logged.apply_weights(streams, np.array([5], np.int64), None, 0) == 5
    assert calls == [1]
    too_many = streamx.Stream(local="/w")
    too_many.proportion, too_many.repeat = 1.0, 2.0
    with pytest.raises(ValueError, match="at most one of"):
        streamx.Stream.validate_weights([too_many])


def _damage(local: Path, shards: Sequence[ShardInfo], case: str) -> None:
    """Leaves each shard's files in one state: both, raw only, zip only, or none."""
    for i, shard in enumerate(shards):
        assert shard.zip_data is not None  # the shards are written compressed
        raw = local / shard.raw_data.basename
        packed = local / shard.zip_data.basename
        state = ("both", "raw", "zip", "none")[i % 4] if case == "mixed" else case
        if state in ("zip", "none"):
            raw.unlink()
        if state in ("raw", "none"):
            packed.unlink()


@pytest.mark.parametrize("case", ["mixed", "both", "zip"])
def test_set_up_local_matches_mosaic_when_zips_are_kept(tmp_path: Path, case: str) -> None:
    src = _write(tmp_path / "src", "zstd")
    ds = streamx.StreamingDataset(local=str(src), batch_size=4)
    for i in range(ds.num_samples):  # decompress every shard (zips are kept: no remote)
        ds[i]
    dirs = {}
    for name in ("ours", "theirs"):
        dirs[name] = tmp_path / name
        shutil.copytree(src, dirs[name], ignore=shutil.ignore_patterns(".*"))
    ours = streamx.Stream(local=str(dirs["ours"]), keep_zip=True)
    theirs = streaming.Stream(local=str(dirs["theirs"]), keep_zip=True)
    our_shards = ours.get_shards(None, False)
    their_shards = theirs.get_shards(streaming.base.world.World.detect(), False)
    _damage(dirs["ours"], our_shards, case)
    _damage(dirs["theirs"], our_shards, case)
    got = np.zeros(len(our_shards), np.int64)
    want = np.zeros(len(our_shards), np.int64)
    ours.set_up_local(our_shards, got)
    theirs.set_up_local(their_shards, want)
    np.testing.assert_array_equal(got, want)
    assert sorted(os.listdir(dirs["ours"])) == sorted(os.listdir(dirs["theirs"]))


def test_set_up_local_drops_zip_beside_raw_when_not_kept(tmp_path: Path) -> None:
    """mosaicml-streaming 0.13.0 deletes the *raw* file here yet counts it as present; the
    compressed one is what is not kept."""
    local = _write(tmp_path / "ds", "zstd")
    stream = streamx.Stream(remote="s3://unused/x", local=str(local), keep_zip=False)
    shards = stream.get_shards(None, False)
    for shard in shards:
        streamx.Stream.prepare_shard(streamx.Stream(local=str(local), keep_zip=True), shard)
    usage = np.zeros(len(shards), np.int64)
    stream.set_up_local(shards, usage)
    assert list(usage) == [s.get_raw_size() for s in shards]
    files = set(os.listdir(local))
    zips = {s.zip_data.basename for s in shards if s.zip_data}
    assert len(zips) == len(shards)
    assert all(s.raw_data.basename in files for s in shards) and not zips & files


def test_spanner_matches_mosaic(tmp_path: Path) -> None:
    ds = streamx.StreamingDataset(local=str(_write(tmp_path / "ds", None)), batch_size=4)
    theirs = streaming.base.spanner.Spanner(
        ds.samples_per_shard.copy()
    )  # it pads the array in place
    assert [ds.spanner[i] for i in range(N)] == [tuple(int(x) for x in theirs[i]) for i in range(N)]
    with pytest.raises(IndexError):
        ds.spanner[N]


def test_on_exception_reraises() -> None:
    ds_type = streamx.StreamingDataset
    ok: Future[int] = Future()
    ok.set_result(1)
    ds_type.on_exception(None, ok)  # type: ignore[arg-type]
    failed: Future[int] = Future()
    failed.set_exception(KeyError("boom"))
    with pytest.raises(KeyError, match="boom"):
        ds_type.on_exception(None, failed)  # type: ignore[arg-type]


def test_local_only_shards_are_never_evicted(tmp_path: Path) -> None:
    local = _write(tmp_path / "ds", "zstd")
    ds = streamx.StreamingDataset(local=str(local), batch_size=4)
    before = sorted(os.listdir(local))
    with pytest.raises(ValueError, match="only copy"):
        ds.evict_shard(0)
    with pytest.raises(ValueError, match="no shards present locally to evict"):
        ds.evict_coldest_shard()
    assert sorted(os.listdir(local)) == before
    # prepare_shard decompresses a compressed-only shard and keeps the zip (the only copy).
    raw = local / ds.shards[1].raw_data.basename
    packed = ds.shards[1].zip_data
    assert packed is not None
    assert not raw.exists()  # the writer leaves compressed shards only
    ds.prepare_shard(1)
    assert raw.exists() and (local / packed.basename).exists()
    assert ds[int(ds.sample_offset_per_shard[1])]["id"] == int(ds.sample_offset_per_shard[1])
    raw.unlink()
    (local / packed.basename).unlink()
    with pytest.raises(FileNotFoundError, match="no `remote`"):
        ds.prepare_shard(1)
