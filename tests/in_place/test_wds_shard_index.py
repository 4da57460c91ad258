"""A wids shard index gives the tars and their counts: nothing is scanned at construction,
each tar's member table comes from its cached copy on first use; bad indexes are named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pq_data import write_mds_like
from wds_data import tar_bytes, write_tars

from streamx import StreamingDataset, WebDatasetStream
from streamx.exceptions import CorruptIndexError, CorruptShardError
from streamx.storage import accounting

SIZES = [12, 7, 12]


def _index(folder: Path, sizes: list[int], **extra: Any) -> Path:
    shards = [
        {
            "url": f"shard-{n:04d}.tar",
            "nsamples": size,
            "filesize": (folder / f"shard-{n:04d}.tar").stat().st_size,
        }
        for n, size in enumerate(sizes)
    ]
    path = folder / "index.wids.json"
    path.write_text(json.dumps({"__kind__": "wids-shard-index-v1", "shardlist": shards, **extra}))
    return path


def _dataset(index: str, local: Path, **kwargs: Any) -> StreamingDataset:
    stream = WebDatasetStream(remote=index, local=str(local))
    return StreamingDataset(streams=[stream], **kwargs)


def test_counts_from_the_index_tables_from_the_cached_copy(tmp_path: Path) -> None:
    write_tars(str(tmp_path / "tars"), SIZES)
    write_mds_like(str(tmp_path / "mds"), SIZES)
    index = _index(tmp_path / "tars", SIZES)
    cache = tmp_path / "c"
    kwargs: dict[str, Any] = {"shuffle": True, "shuffle_seed": 4, "batch_size": 3}
    ds = _dataset(str(index), cache, **kwargs)
    assert ds.samples_per_shard.tolist() == SIZES
    assert not (cache / "streamx-wds").exists(), "no tar is scanned before it is read"
    assert ds[13]["cls"] == 13 and ds[13]["__key__"] == "sample-00013"
    assert len(list((cache / "streamx-wds").iterdir())) == 1  # the tar just read
    reference = StreamingDataset(local=str(tmp_path / "mds"), **kwargs)
    assert [int(s["cls"]) for s in ds] == [int(s["id"]) for s in reference]


def test_over_s3_one_small_get_builds_the_dataset(s3: Any, tmp_path: Path) -> None:
    write_tars(str(tmp_path / "tars"), SIZES)
    for n in range(len(SIZES)):
        s3.put(f"idx/shard-{n:04d}.tar", (tmp_path / "tars" / f"shard-{n:04d}.tar").read_bytes())
    index = _index(tmp_path / "tars", SIZES)
    s3.put("idx/index.wids.json", index.read_bytes())
    accounting.reset()
    ds = _dataset(s3.url("idx/index.wids.json"), tmp_path / "c", batch_size=4)
    assert accounting.totals()["bytes_received"] == index.stat().st_size
    assert sorted(int(s["cls"]) for s in ds) == list(range(sum(SIZES)))


def test_a_count_the_tar_contradicts_is_named(tmp_path: Path) -> None:
    write_tars(str(tmp_path / "tars"), SIZES)
    index = _index(tmp_path / "tars", [12, 8, 12])
    ds = _dataset(str(index), tmp_path / "c")
    assert ds[0]["cls"] == 0
    with pytest.raises(CorruptShardError, match=r"shard-0001\.tar holds 7 samples; its index"):
        ds[12]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", r"is not a WebDataset shard index"),
        ('{"shards": []}', r"it needs a `shardlist`"),
        ('{"__kind__": "other", "shardlist": []}', r"it needs a `shardlist`"),
        ('{"shardlist": [{"url": "a.tar"}]}', r"index\.wids\.json, shard 0: an entry needs"),
        ('{"shardlist": [{"url": "a.tar", "nsamples": -1}]}', r"shard 0: an entry needs"),
    ],
)
def test_a_malformed_index_is_named(tmp_path: Path, document: str, message: str) -> None:
    (tmp_path / "index.wids.json").write_text(document)
    with pytest.raises(CorruptIndexError, match=message):
        _dataset(str(tmp_path / "index.wids.json"), tmp_path / "c")


def test_a_missing_or_resized_shard_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "tars"
    folder.mkdir()
    (folder / "shard-0000.tar").write_bytes(tar_bytes(range(3)))
    index = folder / "index.wids.json"
    listed = [{"url": "shard-0000.tar", "nsamples": 3, "filesize": 10}]
    index.write_text(json.dumps({"shardlist": listed}))
    with pytest.raises(CorruptIndexError, match=r"gives .*shard-0000\.tar 10 bytes"):
        _dataset(str(index), tmp_path / "c")
    listed = [{"url": "shard-0009.tar", "nsamples": 3}]
    index.write_text(json.dumps({"shardlist": listed}))
    with pytest.raises(FileNotFoundError, match=r"shard-0009\.tar, listed by .*, does not exist"):
        _dataset(str(index), tmp_path / "c")


def test_an_index_written_here_is_read_back_without_a_scan(s3: Any, tmp_path: Path) -> None:
    from streamx.format.webdataset.write_index import write_shard_index

    write_tars(str(tmp_path / "tars"), SIZES)
    written = write_shard_index(str(tmp_path / "tars"), str(tmp_path / "tars" / "index.json"))
    assert [e["url"] for e in written["shardlist"]] == [  # type: ignore[attr-defined]
        f"shard-{n:04d}.tar" for n in range(len(SIZES))
    ]
    ds = _dataset(str(tmp_path / "tars" / "index.json"), tmp_path / "c", batch_size=4)
    assert ds.samples_per_shard.tolist() == SIZES
    assert not (tmp_path / "c" / "streamx-wds").exists()
    assert sorted(int(s["cls"]) for s in ds) == list(range(sum(SIZES)))
    # Next to tars in a bucket: relative URLs, uploaded.
    for n in range(len(SIZES)):
        s3.put(f"w/shard-{n:04d}.tar", (tmp_path / "tars" / f"shard-{n:04d}.tar").read_bytes())
    write_shard_index(s3.url("w/shard-{0000..0002}.tar"), s3.url("w/index.json"))
    listed = json.loads(s3.get("w/index.json"))
    assert listed["__kind__"] == "wids-shard-index-v1"
    assert [e["nsamples"] for e in listed["shardlist"]] == SIZES
    assert listed["shardlist"][0]["url"] == "shard-0000.tar"
    remote = _dataset(s3.url("w/index.json"), tmp_path / "c2", batch_size=4)
    assert sorted(int(s["cls"]) for s in remote) == list(range(sum(SIZES)))


def test_a_count_no_tar_could_hold_is_refused_before_planning(tmp_path: Path) -> None:
    folder = tmp_path / "tars"
    folder.mkdir()
    (folder / "shard-0000.tar").write_bytes(tar_bytes(range(3)))
    index = folder / "index.wids.json"
    index.write_text(json.dumps({"shardlist": [{"url": "shard-0000.tar", "nsamples": 10**12}]}))
    with pytest.raises(CorruptIndexError, match=r"gives .*shard-0000\.tar 1000000000000 samples"):
        _dataset(str(index), tmp_path / "c")
