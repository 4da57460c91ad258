"""The batched ``StreamingDataLoader`` path over Parquet row groups gives the per-sample
path's batches: the same samples, order, keys, types, dtypes and values (and the same error
where torch's ``default_collate`` refuses a batch), with real DataLoader workers.

The oracle is streamx's own per-sample path (``batched=False``: each sample decoded to a
dict, then ``default_collate``); ``tests/in_place/test_parquet_order.py`` ties that path's
order to MDS's, and ``tests/test_batched_loader.py`` MDS's to mosaicml-streaming's.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.torch.batched import _joined, pack_batch, pack_columns, unpack_batch

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.timeout(120),
    # The per-sample path hands torch numpy views of Arrow's read-only buffers.
    pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning"),
]


def _typed(rows: int, start: int) -> pa.Table:
    """Every column type the batched path turns into tensors, and strings and binary."""
    i = np.arange(start, start + rows)
    return pa.table(
        {
            "id": pa.array(i, pa.int64()),
            "i8": pa.array(i % 200 - 100, pa.int8()),
            "i16": pa.array(-i * 7, pa.int16()),
            "i32": pa.array(i * 100_003, pa.int32()),
            "u8": pa.array(i % 256, pa.uint8()),
            "u16": pa.array(i * 11, pa.uint16()),
            "u32": pa.array(i + 4_000_000_000 - 600, pa.uint32()),
            "u64": pa.array(i * 2**40, pa.uint64()),
            "f16": pa.array(i / 3, pa.float16()),
            "f32": pa.array(i / 7, pa.float32()),
            "f64": pa.array(-i / 9, pa.float64()),
            "flag": pa.array(i % 3 == 0),
            "fixed": pa.array([[j, -j, 7] for j in i], pa.list_(pa.int16(), 3)),
            "vec": pa.array([[j / 2, j / 4, 0, 1] for j in i], pa.list_(pa.float32())),
            "half": pa.array([[j, j + 1] for j in i], pa.list_(pa.float16(), 2)),
            "text": [f"row {j} " * (j % 4) for j in i],
            "blob": [bytes([j % 251]) * (j % 5) for j in i],
        }
    )


def _write(path: Path, table: pa.Table, group: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=group)
    return str(path)


@pytest.fixture(scope="module")
def typed_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two files of 70 and 53 rows, row groups of 16 (batches span row groups)."""
    root = tmp_path_factory.mktemp("typed")
    _write(root / "src" / "a.parquet", _typed(70, 0), 16)
    _write(root / "src" / "b.parquet", _typed(53, 70), 16)
    return str(root / "src")


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    stream_keys = ("columns", "filters", "image_columns")
    stream_kwargs = {k: kwargs.pop(k) for k in stream_keys if k in kwargs}
    stream = ParquetStream(remote=remote, local=str(local), **stream_kwargs)
    options: dict[str, Any] = {"shuffle": True, "shuffle_seed": 11, "shuffle_block_size": 30}
    return StreamingDataset(streams=[stream], batch_size=8, **{**options, **kwargs})


def _loader(ds: StreamingDataset, workers: int, batched: bool, **kwargs: Any) -> Any:
    context = "fork" if workers else None
    return StreamingDataLoader(
        ds,
        batch_size=8,
        num_workers=workers,
        batched=batched,
        multiprocessing_context=context,
        **kwargs,
    )


def _outcome(loader: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The batches up to the first error, and that error (its type and message)."""
    batches: list[dict[str, Any]] = []
    try:
        for batch in loader:
            batches.append(batch)
    except Exception as err:
        return batches, f"{type(err).__name__}: {err}"
    return batches, None


@pytest.mark.parametrize(("workers", "drop_last"), [(0, False), (2, True)])
def test_batches_equal_the_per_sample_path(
    typed_dir: str, tmp_path: Path, workers: int, drop_last: bool
) -> None:
    per_sample = _loader(
        _dataset(typed_dir, tmp_path / "a"), workers, batched=False, drop_last=drop_last
    )
    expected = [list(per_sample), list(per_sample)]  # the second epoch reshuffles
    ds = _dataset(typed_dir, tmp_path / "b")
    assert ds._sample_access().get_columns is not None
    loader = _loader(ds, workers, batched=True, drop_last=drop_last)
    assert loader._batched and not loader._inline()  # workers read batches column by column
    got = [list(loader), list(loader)]
    for mine, theirs in zip(got, expected, strict=True):
        assert_same_batches(mine, theirs)
    ids = [i for batch in got[0] for i in batch["id"].tolist()]
    assert ids != sorted(ids) and set(ids) <= set(range(123))
    if drop_last:  # each worker's short last batch is dropped
        assert all(len(b["id"]) == 8 for b in got[0]) and len(set(ids)) < 123
    else:
        assert set(ids) == set(range(123))
    # Workers send numpy arrays, which become tensors here: no shared-memory segment each.
    assert not got[0][0]["id"].is_shared() and expected[0][0]["id"].is_shared() == bool(workers)
    kinds = {
        name: (value.dtype, tuple(value.shape[1:]))
        for name, value in got[0][0].items()
        if isinstance(value, torch.Tensor)
    }
    assert kinds["i8"] == kinds["u32"] == kinds["u64"] == (torch.int64, ())
    assert kinds["f16"] == kinds["f32"] == (torch.float64, ())
    assert kinds["flag"] == (torch.bool, ())
    assert kinds["fixed"] == (torch.int16, (3,)) and kinds["vec"] == (torch.float32, (4,))
    assert kinds["half"] == (torch.float16, (2,))
    assert isinstance(got[0][0]["text"], list) and isinstance(got[0][0]["blob"][0], bytes)


def test_arrays_come_straight_from_arrow(typed_dir: str, tmp_path: Path) -> None:
    """Numbers and lists of one length are arrays, strings and binary the rows' values."""
    ds = _dataset(typed_dir, tmp_path / "c", shuffle=False)
    list(ds)  # every row group local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    ids = [3, 90, 17, 4]  # three row groups of two files, out of order
    columns = get_columns(ids)
    assert list(columns) == list(ds[0])
    arrays = {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}
    assert set(columns) - set(arrays) == {"text", "blob"}
    assert arrays["id"].tolist() == ids and arrays["i8"].dtype == np.int64
    assert arrays["fixed"].tolist() == [[i, -i, 7] for i in ids]
    assert arrays["vec"].dtype == np.float32 and arrays["vec"].shape == (4, 4)
    assert all(a.flags.writeable and a.flags.owndata for a in arrays.values())
    assert columns["text"] == [ds[i]["text"] for i in ids]
    assert columns["blob"] == [ds[i]["blob"] for i in ids]


def test_lists_of_one_length_per_batch(tmp_path: Path) -> None:
    """Ragged list columns go row by row (and stack where a batch's rows agree): lengths
    that change within a row group but not within a batch, and lengths that differ only
    between row groups."""
    i = np.arange(96)
    table = pa.table(
        {
            "id": i,
            "steps": pa.array([list(range(1 + (j // 8) % 3)) for j in i], pa.list_(pa.int32())),
            "wide": pa.array([[j] * (1 + j // 32) for j in i], pa.list_(pa.int64())),
        }
    )
    remote = _write(tmp_path / "src" / "r.parquet", table, 32)
    outcomes = []
    for batched in (False, True):
        ds = _dataset(remote, tmp_path / f"c{batched}", shuffle=False)
        outcomes.append(_outcome(_loader(ds, 0, batched)))
    assert outcomes[0][1] is None and outcomes[1][1] is None
    assert_same_batches(outcomes[1][0], outcomes[0][0])
    widths = {(b["steps"].shape[1], b["wide"].shape[1]) for b in outcomes[1][0]}
    assert widths == {(1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (3, 2), (1, 3), (2, 3), (3, 3)}


def _nulls_table(case: str) -> pa.Table:
    i = np.arange(64)
    if case == "null int":
        column = pa.array([None if j == 21 else int(j) for j in i], pa.int32())
    elif case == "null list":
        column = pa.array([None if j == 21 else [j, j] for j in i], pa.list_(pa.int32()))
    elif case == "null in a list":
        column = pa.array([[j, None if j == 21 else j] for j in i], pa.list_(pa.int32(), 2))
    else:  # "uint64 past int64"
        column = pa.array([2**63 + 5 if j == 21 else int(j) for j in i], pa.uint64())
    return pa.table({"id": i, "x": column})


@pytest.mark.parametrize("case", ["null int", "null list", "null in a list", "uint64 past int64"])
def test_nulls_fail_as_on_the_per_sample_path(tmp_path: Path, case: str) -> None:
    """A null (or a uint64 past int64) makes ``default_collate`` refuse its batch: the
    batched path gives the batches before it, then raises torch's own error, as the
    per-sample path does; the other row group's batches still come as tensors."""
    remote = _write(tmp_path / "src" / "n.parquet", _nulls_table(case), 32)
    outcomes = []
    for batched in (False, True):
        ds = _dataset(remote, tmp_path / f"c{batched}", shuffle=False)
        outcomes.append(_outcome(_loader(ds, 0, batched)))
    (theirs, their_error), (ours, our_error) = outcomes
    assert their_error is not None and our_error == their_error
    assert len(ours) == 2  # rows 0-15; rows 16-23 hold row 21
    assert_same_batches(ours, theirs)
    ds = _dataset(remote, tmp_path / "cTrue", shuffle=False)
    list(ds)  # every row group local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    assert isinstance(get_columns([40, 33])["x"], np.ndarray)  # the other row group
    assert isinstance(get_columns([3, 1])["x"], list)  # the row group with the null


def test_row_groups_that_disagree_give_values(tmp_path: Path) -> None:
    """A batch whose row groups disagree on a column (one has nulls) reads that column row by
    row; so do the pieces of a batch a cache limit cut short."""
    remote = _write(tmp_path / "src" / "n.parquet", _nulls_table("null int"), 32)
    ds = _dataset(remote, tmp_path / "c", shuffle=False)
    list(ds)  # every row group local
    access = ds._sample_access()
    assert access.get_columns is not None and access.get_many is not None
    mixed = access.get_columns([40, 3, 50])
    assert isinstance(mixed["x"], list) and mixed["x"] == [40, 3, 50]
    assert isinstance(mixed["id"], np.ndarray) and mixed["id"].tolist() == [40, 3, 50]
    pieces = [access.get_columns([40, 3]), access.get_columns([50])]
    assert isinstance(pieces[0]["x"], list) and isinstance(pieces[1]["x"], np.ndarray)
    batch = unpack_batch(pack_columns(_joined(pieces)))
    assert_same_batches([batch], [unpack_batch(pack_batch(list(access.get_many([40, 3, 50]))))])
    assert batch["x"].tolist() == [40, 3, 50]


def test_image_columns_go_row_by_row(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image")

    def png(value: int) -> bytes:
        buffer = io.BytesIO()
        image.new("L", (3, 2), value).save(buffer, format="PNG")
        return buffer.getvalue()

    table = pa.table({"id": np.arange(40), "png": [png(j) for j in range(40)]})
    remote = _write(tmp_path / "src" / "i.parquet", table, 16)
    ds = _dataset(remote, tmp_path / "c", image_columns=["png"], shuffle=False)
    list(ds)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    images = get_columns([5, 30])["png"]
    assert isinstance(images, list) and [im.getpixel((0, 0)) for im in images] == [5, 30]
    outcomes = []
    for batched in (False, True):
        loader = _loader(
            _dataset(remote, tmp_path / f"c{batched}", image_columns=["png"]), 0, batched
        )
        outcomes.append(_outcome(loader))
    assert outcomes[0] == ([], outcomes[1][1]) and "PIL" in str(outcomes[1][1])
    # With a collate_fn the per-sample path runs, PIL images and all.
    listed = _loader(ds, 0, batched=True, collate_fn=list)
    assert not listed._batched and next(iter(listed))[0]["png"].size == (3, 2)


@pytest.mark.parametrize("workers", [0, 2])
def test_filter_and_projection(typed_dir: str, tmp_path: Path, workers: int) -> None:
    kwargs: dict[str, Any] = {
        "columns": ["vec", "id", "text", "i8"],
        "filters": (pc.field("flag") == False) & (pc.field("id") >= 10),  # noqa: E712
    }
    expected = list(_loader(_dataset(typed_dir, tmp_path / "a", **kwargs), workers, False))
    got = list(_loader(_dataset(typed_dir, tmp_path / "b", **kwargs), workers, True))
    assert_same_batches(got, expected)
    assert list(got[0]) == ["vec", "id", "text", "i8"]
    ids = sorted(i for batch in got for i in batch["id"].tolist())
    assert ids == [i for i in range(10, 123) if i % 3 != 0]


class _Transformed(StreamingDataset):
    """A subclass whose get_item adds a tensor (a transform)."""

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        sample = super().get_item(sample_id, retry)
        sample["t"] = torch.full((2,), float(sample["id"]))
        return sample


class _Iterated(StreamingDataset):
    """A subclass whose __iter__ changes each sample."""

    def __iter__(self) -> Iterator[Any]:
        for sample in super().__iter__():
            yield {**sample, "twice": int(sample["id"]) * 2}


def test_collate_fn_or_transform_keeps_the_per_sample_path(typed_dir: str, tmp_path: Path) -> None:
    ds = _dataset(typed_dir, tmp_path / "a", columns=["id", "text"])
    assert not _loader(ds, 0, batched=True, collate_fn=list)._batched
    batches = []
    for batched in (False, True):
        stream = ParquetStream(remote=typed_dir, local=str(tmp_path / "t"), columns=["id", "f32"])
        transformed = _Transformed(streams=[stream], batch_size=8, shuffle=True)
        assert transformed._sample_access().get_columns is None  # ds[i] runs per sample
        batches.append(list(_loader(transformed, 2, batched)))
    assert_same_batches(batches[1], batches[0])
    assert batches[1][0]["t"].shape == (8, 2)
    stream = ParquetStream(remote=typed_dir, local=str(tmp_path / "i"), columns=["id"])
    iterated = _Iterated(streams=[stream], batch_size=8, shuffle=False)
    first = next(iter(_loader(iterated, 0, batched=True)))
    assert first["twice"].tolist() == [2 * i for i in first["id"].tolist()]


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(typed_dir: str, tmp_path: Path, workers: int) -> None:
    runs = []
    for batched in (False, True):
        local = tmp_path / f"c{batched}"

        def make(local: Path = local) -> StreamingDataset:
            return _dataset(typed_dir, local, columns=["id", "vec"])

        full = list(_loader(make(), workers, batched))
        head_loader = _loader(make(), workers, batched)
        head = []
        for batch in head_loader:
            head.append(batch)
            if len(head) == 5:
                break
        state = head_loader.state_dict()
        resumed = _loader(make(), workers, batched)
        resumed.load_state_dict(state)
        rest = list(resumed)
        assert_same_batches(head, full[:5])
        ids = [i for batch in head + rest for i in batch["id"].tolist()]
        assert sorted(ids) == sorted(i for b in full for i in b["id"].tolist())
        runs.append((full, head, state, rest))
    (full, head, state, rest), (b_full, b_head, b_state, b_rest) = runs
    assert_same_batches(b_full, full)
    assert_same_batches(b_head + b_rest, head + rest)
    assert b_state == state


def test_remote_row_groups_under_a_cache_limit(typed_dir: str, tmp_path: Path) -> None:
    """Row groups fetched while the pass runs, four or so at a time, and batches spread over
    all of them (a batch is read in pieces where the shard cache holds too few): the
    per-sample path's batches."""
    got = []
    for batched in (False, True):
        columns = ["id", "fixed", "text"]
        ds = _dataset(typed_dir, tmp_path / f"c{batched}", columns=columns)
        limit = 4 * max(int(s.raw_data.bytes) for s in ds.shards) + ds.cache_usage + 64
        limited = _dataset(
            typed_dir,
            tmp_path / f"l{batched}",
            columns=columns,
            cache_limit=limit,
            shuffle_block_size=200,
        )
        got.append(list(_loader(limited, 2, batched)))
    assert_same_batches(got[1], got[0])
    assert sorted(i for b in got[1] for i in b["id"].tolist()) == list(range(123))


_HF_SCRIPT = """
import json, sys
import torch
from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
out = []
for batched in (False, True):
    stream = ParquetStream(remote=sys.argv[1], local=sys.argv[2] + str(batched))
    ds = StreamingDataset(streams=[stream], shuffle=True, shuffle_seed=5, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=2, batched=batched,
                                 multiprocessing_context="fork")
    out.append([{k: [str(v.dtype), v.tolist()] if isinstance(v, torch.Tensor) else v
                 for k, v in b.items()} for b in loader])
print(json.dumps({"same": out[0] == out[1], "batches": out[1]}))
"""


@pytest.mark.remote
def test_hf_parquet_goes_the_same_way(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    from hub_server import HubServer, write_repo

    table = _typed(45, 0).select(["id", "i8", "f32", "fixed", "vec", "text"])
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=16)
    write_repo(tmp_path / "hub", "org", "typed", {"data/train.parquet": buffer.getvalue()})
    with HubServer(tmp_path / "hub") as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}
        env.pop("HF_TOKEN", None)
        done = subprocess.run(
            [
                sys.executable,
                "-W",
                "ignore",
                "-c",
                _HF_SCRIPT,
                "hf://datasets/org/typed/data/*.parquet",
                str(tmp_path / "c"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=100,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["same"]
    first = got["batches"][0]
    assert first["i8"][0] == "torch.int64" and first["fixed"][0] == "torch.int16"
    assert sorted(i for b in got["batches"] for i in b["id"][1]) == list(range(45))
