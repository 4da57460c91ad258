"""The batched ``StreamingDataLoader`` path over LitData chunks gives torch's
``default_collate`` batches: the same samples, order, keys, nesting, types, dtypes and
values (and the same error where ``default_collate`` refuses a batch or a chunk is
corrupt), with real DataLoader workers.

The oracle is the per-sample path (``batched=False``: torch's own DataLoader, each sample
decoded to a dict in a worker and collated there by ``default_collate``);
``tests/in_place/test_litdata.py`` ties those samples to LitData's own reader and their
order to MDS's.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from batch_compare import (
    assert_batched_equals_per_sample,
    assert_resume_matches,
    assert_same_batches,
)
from lit_data import row, sample
from pq_data import write_mds_like

from streamx import LitDataStream, Stream, StreamingDataLoader, StreamingDataset
from streamx.exceptions import CorruptShardError
from streamx.format.litdata.batch_leaves import _gather

torch = pytest.importorskip("torch")
pytest.importorskip("litdata")
pytestmark = pytest.mark.timeout(180)
COUNT, CHUNK = 70, 8  # eight chunks of 8 and one of 6: shuffled batches of 8 span chunks


def typed(i: int, ragged: bool = False) -> dict[str, Any]:
    """Sample ``i``: each leaf format that batches into arrays, and some that do not."""
    return {
        "id": i,
        "text": f"row {i} " * (i % 3),
        "score": i / 4,
        "flag": i % 3 == 0,
        "blob": bytes([i % 256]) * (i % 5),
        "vec": np.arange(1 + i % 3 if ragged else 3, dtype=np.int32) * i,  # no header
        "grid": np.full((2, 3), i, dtype=np.float16),  # numpy header
        "tokens": torch.arange(4, dtype=torch.int64) + i,  # no header
        "mask": torch.tensor([[i % 2 == 0, True], [False, i % 5 == 0]]),  # tensor header
        "wide": torch.full((2,), i, dtype=torch.uint8),
        "feat": torch.full((2, 2), i / 3, dtype=torch.float32),
        "nested": {"pair": (i, f"{i}"), "arr": np.full(2, i, np.int64)},
        "duo": (i, i * 2.5),  # a tuple: its leaves (LitData stores a list as one json leaf)
    }


def as_tuple(i: int) -> tuple[int, str, Any]:
    """A sample that is a tuple: the per-sample path keeps it."""
    return (i, f"t{i}", np.full(3, i, np.int16))


def _write(fn: Any, out: Path, count: int, chunk: int) -> None:
    """``fn(i)`` for ``i < count`` in chunks of ``chunk``, by LitData's own writer (the one
    ``litdata.optimize`` runs in its workers; here in this process, which starts none)."""
    from litdata.streaming.writer import BinaryWriter

    out.mkdir(parents=True)
    writer = BinaryWriter(str(out), chunk_size=chunk)
    for i in range(count):
        writer[i] = fn(i)
    writer.done()
    writer.merge(1)


@pytest.fixture(scope="module")
def lit_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("lit") / "ds"
    _write(typed, out, COUNT, CHUNK)
    return str(out)


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    options: dict[str, Any] = {"shuffle": True, "shuffle_seed": 11, "shuffle_block_size": 30}
    stream = LitDataStream(remote=remote, local=str(local))
    return StreamingDataset(streams=[stream], batch_size=8, **{**options, **kwargs})


def _loader(ds: StreamingDataset, workers: int, batched: bool, **kwargs: Any) -> Any:
    context = kwargs.pop("context", "fork")
    context = context if workers else None
    return StreamingDataLoader(
        ds,
        batch_size=8,
        num_workers=workers,
        batched=batched,
        multiprocessing_context=context,
        **kwargs,
    )


def _outcome(loader: Any) -> tuple[list[Any], str | None]:
    """The batches up to the first error, and that error (its type and message)."""
    batches: list[Any] = []
    try:
        for batch in loader:
            batches.append(batch)
    except Exception as err:
        return batches, f"{type(err).__name__}: {err}"
    return batches, None


@pytest.mark.parametrize(
    ("workers", "drop_last", "context"), [(0, False, None), (2, True, "fork"), (2, False, "spawn")]
)
def test_batches_equal_default_collate(
    lit_dir: str, tmp_path: Path, workers: int, drop_last: bool, context: str | None
) -> None:
    """Spawned workers get the dataset by pickle, open chunk readers included (one epoch:
    the oracle's workers fork, the order is the same)."""
    first = assert_batched_equals_per_sample(
        lambda local: _dataset(lit_dir, tmp_path / local),
        _loader,
        key="id",
        count=COUNT,
        workers=workers,
        drop_last=drop_last,
        context=context,
    )
    kinds = {k: (v.dtype, tuple(v.shape)) for k, v in first.items() if torch.is_tensor(v)}
    assert kinds["id"] == (torch.int64, (8,)) and kinds["flag"] == (torch.bool, (8,))
    assert kinds["grid"] == (torch.float16, (8, 2, 3)) and kinds["vec"][0] == torch.int32
    assert kinds["mask"] == (torch.bool, (8, 2, 2)) and kinds["wide"] == (torch.uint8, (8, 2))
    assert kinds["feat"] == (torch.float32, (8, 2, 2))
    assert isinstance(first["nested"]["pair"][1], tuple) and isinstance(first["duo"], list)
    assert isinstance(first["text"], list) and isinstance(first["blob"][0], bytes)


def test_columns_come_leaf_by_leaf(lit_dir: str, tmp_path: Path) -> None:
    """Numbers and arrays of one shape are arrays (fresh, writable); strings, bytes and
    nested values are the samples' values."""
    ds = _dataset(lit_dir, tmp_path / "c", shuffle=False)
    list(ds)  # every chunk local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    ids = [35, 3, 69, 17]  # four chunks, out of order
    columns = get_columns(ids)
    samples = [ds[i] for i in ids]
    assert list(columns) == list(samples[0])
    arrays = {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}
    assert set(arrays) == {"id", "score", "flag", "vec", "grid", "tokens", "mask", "wide", "feat"}
    assert all(a.flags.writeable and len(a) == 4 for a in arrays.values())
    assert arrays["id"].tolist() == ids and arrays["score"].dtype == np.float64
    assert np.array_equal(arrays["grid"], np.stack([s["grid"] for s in samples]))
    assert arrays["tokens"].tolist() == [s["tokens"].tolist() for s in samples]
    for name in set(columns) - set(arrays):
        assert_same_batches(columns[name], [s[name] for s in samples], name)
    assert get_columns([]) == {name: [] for name in columns}
    with pytest.raises(IndexError):
        get_columns([3, COUNT])


def test_ragged_arrays_and_images_fail_as_default_collate_does(tmp_path: Path) -> None:
    """Arrays whose shapes differ within a batch, and PIL images, come as their values, and
    the batch fails with torch's own error, as on the per-sample path; a batch whose arrays
    agree (even across chunks) still stacks."""
    _write(sample, tmp_path / "img", 30, 8)  # ``vec`` has i % 5 values; PIL and JPEG
    outcomes = []
    for batched in (False, True):
        ds = _dataset(str(tmp_path / "img"), tmp_path / f"c{batched}")
        outcomes.append(_outcome(_loader(ds, 0, batched)))
    assert outcomes[0] == ([], outcomes[1][1]) and outcomes[1][1] is not None
    ds = _dataset(str(tmp_path / "img"), tmp_path / "cTrue", shuffle=False)
    list(ds)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    columns = get_columns([1, 2])
    assert isinstance(columns["vec"], list) and columns["pil"][1].size == (5, 4)
    stacked = get_columns([1, 6, 11, 26])["vec"]  # 1 % 5 == 6 % 5 == ...: one shape
    assert isinstance(stacked, np.ndarray) and stacked.tolist() == [[0], [0], [0], [0]]


def test_rows_chunks(tmp_path: Path) -> None:
    """Tabular samples LitData stores as Arrow rows: each key its rows' values."""
    _write(row, tmp_path / "rows", 45, 8)
    got = []
    for workers, batched in ((0, False), (0, True), (2, True)):
        ds = _dataset(str(tmp_path / "rows"), tmp_path / f"c{workers}{batched}")
        got.append(list(_loader(ds, workers, batched)))
    assert_same_batches(got[1], got[0])
    assert_same_batches(got[2], got[0])
    assert got[1][0]["weight"].dtype == torch.float64 and isinstance(got[1][0]["tags"], list)


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(lit_dir: str, tmp_path: Path, workers: int) -> None:
    def loader(local: str, batched: bool) -> Any:
        return _loader(_dataset(lit_dir, tmp_path / local), workers, batched)

    assert_resume_matches(loader, "id", 4)


def test_mixed_with_mds_reads_per_sample(tmp_path: Path) -> None:
    """A LitData stream beside an MDS one: no batch reader, the per-sample path's batches."""
    write_mds_like(str(tmp_path / "mds"), [16, 16, 8])
    _write(_id_only, tmp_path / "lit", 40, 16)
    got = []
    for batched in (False, True):
        streams = [
            LitDataStream(remote=str(tmp_path / "lit"), local=str(tmp_path / f"l{batched}")),
            Stream(local=str(tmp_path / "mds")),
        ]
        ds = StreamingDataset(streams=streams, batch_size=8, shuffle=True, shuffle_seed=2)
        assert ds._sample_access().get_columns is None
        got.append(list(_loader(ds, 2, batched)))
    assert_same_batches(got[1], got[0])
    ids = sorted(i for batch in got[1] for i in batch["id"].tolist())
    assert ids == sorted(list(range(40)) * 2)


def _id_only(i: int) -> dict[str, int]:
    return {"id": i}


def test_samples_that_are_not_dicts_read_per_sample(tmp_path: Path) -> None:
    _write(as_tuple, tmp_path / "t", 20, 8)
    got = []
    for batched in (False, True):
        ds = _dataset(str(tmp_path / "t"), tmp_path / f"c{batched}")
        assert ds._sample_access().get_columns is None
        got.append(list(_loader(ds, 0, batched)))
    assert_same_batches(got[1], got[0])
    assert isinstance(got[1][0], list) and got[1][0][2].dtype == torch.int16


def test_chunks_fetched_under_a_cache_limit(lit_dir: str, tmp_path: Path) -> None:
    """Chunks fetched while the pass runs, four or so at a time, and batches that span them
    (read in pieces where the shard cache holds too few): the per-sample path's batches."""
    got = []
    for batched in (False, True):
        ds = _dataset(lit_dir, tmp_path / f"c{batched}")
        limit = 4 * max(int(s.raw_data.bytes) for s in ds.shards) + ds.cache_usage + 64
        limited = _dataset(
            lit_dir, tmp_path / f"l{batched}", cache_limit=limit, shuffle_block_size=200
        )
        got.append(list(_loader(limited, 2, batched)))
    assert_same_batches(got[1], got[0])
    assert sorted(i for b in got[1] for i in b["id"].tolist()) == list(range(COUNT))


def test_pieces_of_arrays_and_of_samples_join_as_default_collate(
    lit_dir: str, tmp_path: Path
) -> None:
    """A batch cut in pieces where one piece came as arrays and another as the samples'
    values (a chunk read as samples): the tensor leaves' array rows join the other piece's
    tensors, and the batch is ``default_collate``'s of the samples."""
    from streamx.format.batch_parts import Columns
    from streamx.torch.batched import _joined, pack_columns, unpack_batch

    ds = _dataset(lit_dir, tmp_path / "c", shuffle=False)
    list(ds)  # every chunk local
    access = ds._sample_access()
    assert access.get_columns is not None and access.get_many is not None
    ids = [7, 3, 40]
    arrays = access.get_columns(ids[1:])
    assert arrays is not None and isinstance(arrays["mask"], np.ndarray)
    samples = list(access.get_many(ids[:1]))
    as_values: Columns = {key: [s[key] for s in samples] for key in arrays}
    assert torch.is_tensor(as_values["mask"][0])
    # The samples' piece first: default_collate dispatches on the first value.
    batch = unpack_batch(pack_columns(_joined([as_values, arrays])))
    want = torch.utils.data.default_collate(list(access.get_many(ids)))
    assert_same_batches(batch, want)


@pytest.mark.parametrize("width", [0, 3, 9000])
def test_leaf_bytes_gathered_as_sliced(width: int) -> None:
    """Evenly spaced leaves (one strided copy), others (one fancy index, or a copy per
    sample when large), repeated and reversed: each row the bytes a slice gives."""
    data = np.frombuffer(np.random.default_rng(5).bytes(200_000), np.uint8)
    for begins in (
        [0, 10_000, 20_000, 30_000],
        [500, 70_000, 9, 12_345],
        [7, 7, 100],
        [40_000, 20_000, 0],
        [3],
    ):
        rows = _gather(data, np.asarray(begins, np.int64), width)
        assert rows.shape == (len(begins), width) and rows.flags.writeable
        assert [r.tobytes() for r in rows] == [data[b : b + width].tobytes() for b in begins]


def _corrupt(lit_dir: str, tmp_path: Path, sample: int, edit: Any) -> tuple[str, str]:
    """A copy of the dataset whose chunk 1's sample ``sample`` is edited by ``edit(data,
    offset)``; returns the copy and the chunk's name."""
    copy = tmp_path / "copy"
    shutil.copytree(lit_dir, copy)
    chunk = sorted(copy.glob("chunk-*.bin"))[1]
    data = bytearray(chunk.read_bytes())
    (offset,) = struct.unpack_from("<I", data, 4 + 4 * sample)
    edit(data, offset)
    chunk.write_bytes(bytes(data))
    return str(copy), chunk.name


def _longer_first_leaf(data: bytearray, offset: int) -> None:
    struct.pack_into("<I", data, offset, struct.unpack_from("<I", data, offset)[0] + 1)


def _shorter_id(data: bytearray, offset: int) -> None:
    """The ``id`` leaf one byte short and the ``text`` leaf one longer: the sizes add up."""
    first, second = struct.unpack_from("<II", data, offset)
    struct.pack_into("<II", data, offset, first - 1, second + 1)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_longer_first_leaf, "its leaf sizes do not add up to its bytes"),
        (_shorter_id, r"leaf 0: does not decode \(unpack requires a buffer of 8 bytes\)"),
    ],
)
@pytest.mark.parametrize("workers", [0, 2])
def test_a_corrupt_chunk_is_named(
    lit_dir: str, tmp_path: Path, edit: Any, message: str, workers: int
) -> None:
    copy, name = _corrupt(lit_dir, tmp_path, 5, edit)  # sample 13 of the dataset
    errors = []
    for batched in (False, True):
        ds = _dataset(copy, tmp_path / f"c{batched}", shuffle=False)
        if batched:
            assert ds._sample_access().get_columns is not None
        loader = _loader(ds, workers, batched)
        with pytest.raises(CorruptShardError, match=rf"{name}, sample 5(, leaf 0)?: ") as err:
            list(loader)
        assert err.match(message)
        errors.append(str(err.value).splitlines()[-1] if workers else str(err.value))
    assert errors[0] == errors[1]
