"""The batched DataLoader paths give torch's per-sample batches and mosaicml-streaming's.

Three streamx paths, with real DataLoader workers: reading in the main process (the default
when Rust and numpy decode every column), workers sending packed batches (the default when
workers must run, here because of a ``worker_init_fn``) and torch's per-sample path
(``batched=False``). mosaicml-streaming's ``StreamingDataLoader`` is the oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.dist,
    # The per-sample paths (streamx's and mosaic's) hand torch read-only ndarrays.
    pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning"),
]

COLUMNS = {
    "id": "int",
    "data": "bytes",
    "text": "str",
    "arr": "ndarray:uint16:4",
    "dyn": "ndarray",
    "f": "float32",
    "u": "uint8",
}
SAMPLES = 157


def _sample(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "data": bytes([i % 251]) * (i % 13 + 1),
        "text": f"sample {i} " * (i % 5 + 1),
        "arr": np.arange(i, i + 4, dtype=np.uint16),
        "dyn": np.full(3, -i, dtype=np.int32),
        "f": np.float32(i / 8),
        "u": np.uint8(i % 256),
    }


def _written(
    factory: pytest.TempPathFactory,
    name: str,
    columns: dict[str, str],
    sample: Callable[[int], dict[str, Any]],
) -> Path:
    """A dataset of ``SAMPLES`` samples in small shards (so batches span shards)."""
    out = factory.mktemp(name)
    with streamx.MDSWriter(out=str(out), columns=columns, size_limit=1500) as writer:
        for i in range(SAMPLES):
            writer.write(sample(i))
    return out


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _written(tmp_path_factory, "batched", COLUMNS, _sample)


def _init_worker(worker_id: int) -> None:
    """A worker_init_fn: asks for real worker processes."""


def _loader(lib: Any, path: Path, workers: int, *, path_kind: str = "", **kwargs: Any) -> Any:
    ds = lib.StreamingDataset(
        local=str(path), batch_size=7, shuffle=True, shuffle_block_size=40, num_canonical_nodes=2
    )
    extra: dict[str, Any] = {"multiprocessing_context": "fork" if workers else None, **kwargs}
    if path_kind == "per-sample":
        extra["batched"] = False
    elif path_kind == "workers":
        extra["worker_init_fn"] = _init_worker
    return lib.StreamingDataLoader(ds, batch_size=7, num_workers=workers, **extra)


def _assert_same(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert mine.keys() == other.keys()
        for name, value in mine.items():
            assert type(value) is type(other[name]), name
            if isinstance(value, torch.Tensor):
                assert value.dtype == other[name].dtype and value.shape == other[name].shape
                assert torch.equal(value, other[name]), name
            else:
                assert value == other[name], name


def _batches(loader: Any, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    for batch in loader:
        out.append(batch)
        if len(out) == limit:
            break
    return out


@pytest.mark.parametrize(("workers", "drop_last"), [(0, False), (2, True)])
def test_paths_match_each_other_and_mosaic(
    dataset_dir: Path, workers: int, drop_last: bool
) -> None:
    streaming = pytest.importorskip("streaming")
    oracle = _loader(streaming, dataset_dir, workers, drop_last=drop_last)
    expected = [_batches(oracle), _batches(oracle)]  # the second epoch reshuffles
    assert all(len(b["id"]) == 7 for b in expected[0][:-1])
    for kind in ("", "workers", "per-sample"):
        loader = _loader(streamx, dataset_dir, workers, path_kind=kind, drop_last=drop_last)
        assert loader._batched == (kind != "per-sample")
        assert (loader._batched and loader._inline()) == (kind == "")
        for epoch in expected:
            _assert_same(_batches(loader), epoch)


@pytest.mark.parametrize("kind", ["", "workers", "per-sample"])
def test_resume_matches_mosaic(dataset_dir: Path, kind: str) -> None:
    streaming = pytest.importorskip("streaming")
    theirs = _loader(streaming, dataset_dir, 2)
    head = _batches(theirs, limit=3)
    state = theirs.state_dict()
    resumed_theirs = _loader(streaming, dataset_dir, 2)
    resumed_theirs.load_state_dict(state)
    rest = _batches(resumed_theirs)
    ours = _loader(streamx, dataset_dir, 2, path_kind=kind)
    _assert_same(_batches(ours, limit=3), head)
    assert ours.state_dict() == state
    resumed = _loader(streamx, dataset_dir, 2, path_kind=kind)
    resumed.load_state_dict(state)
    _assert_same(_batches(resumed), rest)
    ids = [i for b in head + rest for i in b["id"].tolist()]
    assert set(ids) == set(range(SAMPLES))


@pytest.mark.slow
def test_spawned_workers_send_batches(dataset_dir: Path) -> None:
    expected = _batches(_loader(streamx, dataset_dir, 2, path_kind="per-sample"))
    loader = _loader(streamx, dataset_dir, 2, path_kind="workers", multiprocessing_context="spawn")
    _assert_same(_batches(loader), expected)


def test_custom_collate_keeps_per_sample_path(dataset_dir: Path) -> None:
    loader = _loader(streamx, dataset_dir, 0, collate_fn=list)
    assert not loader._batched
    batch = next(iter(loader))
    assert isinstance(batch, list) and isinstance(batch[0], dict)


class _Transformed(streamx.StreamingDataset):
    """A subclass whose get_item adds a tensor (a transform): workers must run it."""

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        sample = super().get_item(sample_id, retry)
        sample["t"] = torch.full((2,), float(sample["id"]))
        return sample


def test_transformed_samples_through_batched_workers(dataset_dir: Path) -> None:
    batches = []
    for batched in (True, False):
        ds = _Transformed(local=str(dataset_dir), batch_size=7, shuffle=True)
        loader = streamx.StreamingDataLoader(
            ds, batch_size=7, num_workers=2, multiprocessing_context="fork", batched=batched
        )
        assert loader._batched == batched and not loader._inline()
        batches.append(_batches(loader))
    _assert_same(*batches)
    assert batches[0][0]["t"].shape == (7, 2)


FIXED_COLUMNS = {
    "id": "int",
    "arr": "ndarray:uint16:4",
    "grid": "ndarray:float32:2,3",
    "f": "float32",
    "d": "float64",
    "u": "uint8",
    "i8": "int8",
    "u64": "ndarray:uint64:2",
}


def _fixed_sample(i: int) -> dict[str, Any]:
    return {
        "id": i - 50,
        "arr": np.arange(i, i + 4, dtype=np.uint16),
        "grid": np.full((2, 3), i / 3, dtype=np.float32),
        "f": np.float32(i / 8),
        "d": np.float64(-i / 7),
        "u": np.uint8(i % 256),
        "i8": np.int8(i % 128 - 64),
        "u64": np.array([2**63 + i, i], dtype=np.uint64),
    }


@pytest.fixture(scope="module")
def fixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _written(tmp_path_factory, "fixed", FIXED_COLUMNS, _fixed_sample)


@pytest.mark.parametrize(("workers", "drop_last"), [(0, False), (2, True), (3, False)])
def test_fixed_width_columns_are_gathered_as_the_other_paths_collate(
    fixed_dir: Path, workers: int, drop_last: bool
) -> None:
    """Every column of fixed width: the main process copies each batch straight into one
    array per column; the batches equal the per-sample path's and mosaic's."""
    streaming = pytest.importorskip("streaming")
    oracle = _loader(streaming, fixed_dir, workers, drop_last=drop_last)
    expected = [_batches(oracle), _batches(oracle)]
    for kind in ("", "per-sample"):
        loader = _loader(streamx, fixed_dir, workers, path_kind=kind, drop_last=drop_last)
        gathers = loader.dataset._sample_access().get_columns is not None
        assert gathers and (loader._batched and loader._inline()) == (kind == "")
        for epoch in expected:
            _assert_same(_batches(loader), epoch)


def test_only_all_fixed_width_schemas_are_gathered(dataset_dir: Path, fixed_dir: Path) -> None:
    from streamx.format.readers.batch_columns import batch_layout
    from streamx.format.readers.mds import MDSSampleReader

    mixed = streamx.StreamingDataset(local=str(dataset_dir), batch_size=7)
    assert mixed._sample_access().get_columns is None  # a dynamic ndarray (and a pickle-free mix)
    fixed = streamx.StreamingDataset(local=str(fixed_dir), batch_size=7)
    reader = fixed._reader
    assert isinstance(reader, MDSSampleReader)
    layout = reader.batch_layout
    assert layout is not None
    shapes = {c.name: (c.dtype.name, c.shape, c.width) for c in layout.fixed}
    assert shapes["id"] == ("int64", (), 8) and shapes["grid"] == ("float32", (2, 3), 24)
    assert shapes["u64"] == ("uint64", (2,), 16) and list(shapes) == sorted(FIXED_COLUMNS)
    plans = reader._plans
    other = type(plans[0]).from_columns({**FIXED_COLUMNS, "u": "uint16"})
    assert batch_layout([*plans, other]) is None  # two schemas that disagree
    # torch's default_collate refuses uint64 scalars: such a column takes the usual path.
    assert batch_layout([type(plans[0]).from_columns({"x": "uint64"})]) is None
    # bytes and str come as lists, but only beside a column of fixed width.
    listed = batch_layout([type(plans[0]).from_columns({"b": "bytes", "s": "str", "i": "int"})])
    assert listed is not None and [c.name for c in listed.listed] == ["b", "s"]
    assert batch_layout([type(plans[0]).from_columns({"b": "bytes", "s": "str"})]) is None
    zero_copy = streamx.StreamingDataset(local=str(fixed_dir), batch_size=7, zero_copy=True)
    zero_copy_reader = zero_copy._reader
    assert isinstance(zero_copy_reader, MDSSampleReader)
    assert zero_copy_reader.batch_layout is None  # its views are not copied into batches


LISTED_COLUMNS = {"label": "int", "data": "bytes", "text": "str", "arr": "ndarray:int16:3"}


def _listed_sample(i: int) -> dict[str, Any]:
    return {
        "label": i,
        "data": bytes([i % 251]) * (i % 13),  # empty too
        "text": "é" * (i % 7),
        "arr": np.array([i, -i, 7], dtype=np.int16),
    }


@pytest.fixture(scope="module")
def listed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _written(tmp_path_factory, "listed", LISTED_COLUMNS, _listed_sample)


@pytest.mark.parametrize("workers", [0, 2])
def test_bytes_and_str_columns_come_as_lists_beside_gathered_arrays(
    listed_dir: Path, workers: int
) -> None:
    streaming = pytest.importorskip("streaming")
    expected = [_batches(_loader(streaming, listed_dir, workers))]
    for kind in ("", "per-sample"):
        loader = _loader(streamx, listed_dir, workers, path_kind=kind)
        assert loader.dataset._sample_access().get_columns is not None
        got = [_batches(loader)]
        for mine, theirs in zip(got, expected, strict=True):
            _assert_same(mine, theirs)
        assert isinstance(got[0][0]["data"], list) and isinstance(got[0][0]["text"], list)
