"""LitData optimized datasets read in place: every leaf as LitData itself reads it, the
order of MDS with the same shard sizes, mixing, resumption, S3, and what is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lit_data import row, sample, write_litdata, write_rows
from pq_data import write_mds_like

from streamx import LitDataStream, Stream, StreamingDataset
from streamx.exceptions import CorruptIndexError, CorruptShardError

pytest.importorskip("litdata")
COUNT, CHUNK = 40, 16  # chunks of 16, 16 and 8


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lit") / "ds"
    write_litdata(str(out), COUNT, CHUNK)
    return out


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    kwargs.setdefault("batch_size", 4)
    return StreamingDataset(streams=[LitDataStream(remote=remote, local=str(local))], **kwargs)


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, dict):
        return set(ours) == set(theirs) and all(_same(ours[k], theirs[k]) for k in theirs)
    if isinstance(theirs, (list, tuple)):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs))
    if isinstance(theirs, memoryview):
        return bytes(ours) == bytes(theirs)
    if hasattr(theirs, "numpy") and hasattr(ours, "numpy"):  # torch tensors
        return bool(ours.dtype == theirs.dtype and (ours == theirs).all())
    if isinstance(theirs, np.ndarray):
        return ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    if hasattr(theirs, "getpixel"):  # PIL images
        return bool(ours.mode == theirs.mode and ours.tobytes() == theirs.tobytes())
    return bool(type(ours) is type(theirs) and ours == theirs)


# LitData's own reader builds tensors over read-only buffers (our reader copies).
@pytest.mark.filterwarnings("ignore:The given buffer is not writable:UserWarning")
def test_every_leaf_reads_as_litdata_reads_it(written: Path, tmp_path: Path) -> None:
    import litdata

    ours = _dataset(str(written), tmp_path / "c")
    theirs = litdata.StreamingDataset(str(written))
    assert ours.samples_per_shard.tolist() == [16, 16, 8] and len(theirs) == COUNT
    for i in range(COUNT):
        mine, reference = dict(ours[i]), dict(theirs[i])
        jpeg, _ = mine.pop("jpeg"), reference.pop("jpeg")  # LitData decodes it to a tensor
        assert _same(mine, reference), i
        expected = sample(i)["jpeg"]
        assert jpeg.size == expected.size and jpeg.tobytes() == expected.tobytes()


def test_tabular_rows_read_as_litdata_reads_them(tmp_path: Path) -> None:
    """Scalar, string and list samples: LitData writes them as Arrow rows after the chunk's
    table (with the compact ``json`` format for lists, or no leaves at all)."""
    import litdata

    write_rows(str(tmp_path / "rows"), 30, 8)
    ours = _dataset(str(tmp_path / "rows"), tmp_path / "c")
    theirs = litdata.StreamingDataset(str(tmp_path / "rows"))
    assert ours.samples_per_shard.tolist() == [8, 8, 8, 6]
    for i in range(30):
        assert ours[i] == theirs[i] == row(i)


def test_order_mixing_and_resume_as_mds(written: Path, tmp_path: Path) -> None:
    write_mds_like(str(tmp_path / "mds"), [16, 16, 8])
    kwargs: dict[str, Any] = {"shuffle": True, "shuffle_seed": 3, "num_canonical_nodes": 2}
    ours = [s["id"] for s in _dataset(str(written), tmp_path / "c", **kwargs)]
    mds = StreamingDataset(local=str(tmp_path / "mds"), batch_size=4, **kwargs)
    assert ours == [int(s["id"]) for s in mds] and sorted(ours) == list(range(COUNT))
    partial = _dataset(str(written), tmp_path / "c", **kwargs)
    head = [s["id"] for s, _ in zip(partial, range(13))]
    state = json.loads(json.dumps(partial.state_dict(13, False)))
    resumed = _dataset(str(written), tmp_path / "c", **kwargs)
    resumed.load_state_dict(state)
    assert head + [s["id"] for s in resumed] == ours
    mixed = StreamingDataset(
        streams=[
            LitDataStream(remote=str(written), local=str(tmp_path / "m")),
            Stream(local=str(tmp_path / "mds")),
        ],
        batch_size=4,
    )
    assert sorted(int(s["id"]) for s in mixed) == sorted(list(range(COUNT)) * 2)


def test_from_s3(written: Path, s3: Any, tmp_path: Path) -> None:
    for path in written.iterdir():
        s3.put(f"lit/{path.name}", path.read_bytes())
    ds = _dataset(s3.url("lit"), tmp_path / "c", shuffle=True)
    got = {s["id"]: s for s in ds}
    assert sorted(got) == list(range(COUNT))
    assert got[7]["vec"].tolist() == (np.arange(2, dtype=np.int32) * 7).tolist()


def _edited(written: Path, tmp_path: Path, edit: Any) -> Path:
    copy = tmp_path / "edited"
    shutil.copytree(written, copy)
    index = json.loads((copy / "index.json").read_text())
    edit(index)
    (copy / "index.json").write_text(json.dumps(index))
    return copy


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("item_loader", "TokensLoader", r"LitData's TokensLoader are not read in place"),
        ("encryption", {"level": "chunk"}, r"encrypted LitData chunks"),
        ("compression", "zstd", r"compressed with zstd are not read in place"),
    ],
)
def test_what_is_not_read_is_refused_by_name(
    written: Path, tmp_path: Path, key: str, value: Any, message: str
) -> None:
    copy = _edited(written, tmp_path, lambda index: index["config"].update({key: value}))
    with pytest.raises(ValueError, match=message):
        _dataset(str(copy), tmp_path / "c")


def test_formats_not_read_and_pickles(written: Path, tmp_path: Path) -> None:
    def with_format(name: str) -> Any:
        return lambda index: index["config"]["data_format"].__setitem__(4, name)

    video = _edited(written, tmp_path / "v", with_format("video"))
    with pytest.raises(ValueError, match=r"index\.json: LitData's 'video' format"):
        _dataset(str(video), tmp_path / "c1")
    pickled = _edited(written, tmp_path / "p", with_format("pickle"))
    with pytest.raises(ValueError, match=r"pass allow_pickle=True"):
        _dataset(str(pickled), tmp_path / "c2")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda index: index.pop("chunks"), r"no `chunks` list"),
        (lambda index: index["chunks"][0].update(filename="../x.bin"), r"chunk 0: a bad file"),
        (lambda index: index["chunks"][1].update(chunk_size=-1), r"chunk 1: chunk_size"),
        (lambda index: index["config"].update(data_spec="[1, 2"), r"not a LitData treespec"),
        (lambda index: index["chunks"][0].update(chunk_size=10**12), r"samples cannot fit in"),
    ],
)
def test_a_bad_index_is_named(written: Path, tmp_path: Path, edit: Any, message: str) -> None:
    copy = _edited(written, tmp_path, edit)
    with pytest.raises((CorruptIndexError, ValueError), match=message):
        _dataset(str(copy), tmp_path / "c")


def test_a_chunk_that_contradicts_its_index_is_named(written: Path, tmp_path: Path) -> None:
    copy = _edited(written, tmp_path, lambda index: None)
    chunk = sorted(copy.glob("chunk-*.bin"))[1]
    data = bytearray(chunk.read_bytes())
    data[0:4] = (99).to_bytes(4, "little")  # the sample count
    chunk.write_bytes(bytes(data))
    ds = _dataset(str(copy), tmp_path / "c")
    assert ds[0]["id"] == 0
    with pytest.raises(CorruptShardError, match=rf"{chunk.name}: the chunk does not open with"):
        ds[16]
