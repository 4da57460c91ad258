"""Real DataLoader workers (fork and spawn): order parity, epochs, and mid-epoch resumption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import streamx

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.dist


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("loader")
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=400) as writer:
        for i in range(203):
            writer.write({"id": i})
    return out


def _ids(loader: Any, limit: int | None = None) -> list[int]:
    out: list[int] = []
    for n, batch in enumerate(loader, start=1):
        out += batch["id"].tolist()
        if n == limit:
            break
    return out


def _loader(lib: Any, path: Path, workers: int, context: str | None = None, **kwargs: Any) -> Any:
    ds = lib.StreamingDataset(
        local=str(path), batch_size=8, shuffle=True, shuffle_block_size=50, **kwargs
    )
    return lib.StreamingDataLoader(
        ds, batch_size=8, num_workers=workers, multiprocessing_context=context
    )


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_worker_order_matches_mosaic(dataset_dir: Path, context: str) -> None:
    streaming = pytest.importorskip("streaming")
    ours = _loader(streamx, dataset_dir, 2, context)
    theirs = _loader(streaming, dataset_dir, 2, "fork")
    for _epoch in range(2):
        assert _ids(ours) == _ids(theirs)


def test_every_sample_once_per_epoch(dataset_dir: Path) -> None:
    loader = _loader(streamx, dataset_dir, 3, "fork")
    first, second = _ids(loader), _ids(loader)
    assert sorted(first) == sorted(second) == list(range(203))
    assert first != second  # a new epoch reshuffles


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(dataset_dir: Path, workers: int) -> None:
    full = _ids(_loader(streamx, dataset_dir, workers, "fork" if workers else None))
    loader = _loader(streamx, dataset_dir, workers, "fork" if workers else None)
    head = _ids(loader, limit=5)
    state = loader.state_dict()
    assert state is not None and set(state) == {
        "epoch", "sample_in_epoch", "num_canonical_nodes", "shuffle_seed", "initial_physical_nodes"
    }  # fmt: skip
    assert state["sample_in_epoch"] == 40 and state["epoch"] == 0
    resumed = _loader(streamx, dataset_dir, workers, "fork" if workers else None)
    resumed.load_state_dict(state)
    assert head + _ids(resumed) == full


def test_state_dict_crosses_libraries(dataset_dir: Path) -> None:
    """A state saved by mosaicml-streaming resumes in streamx with the same continuation."""
    streaming = pytest.importorskip("streaming")
    theirs = _loader(streaming, dataset_dir, 2, "fork")
    head = _ids(theirs, limit=4)
    state = theirs.state_dict()
    rest_theirs = _ids(_resume(streaming, dataset_dir, state))
    rest_ours = _ids(_resume(streamx, dataset_dir, state))
    assert rest_ours == rest_theirs
    assert sorted(head + rest_ours) == list(range(203))
    ours = _loader(streamx, dataset_dir, 2, "fork")
    _ids(ours, limit=4)
    assert ours.state_dict() == state


def _resume(lib: Any, path: Path, state: dict[str, Any]) -> Any:
    loader = _loader(lib, path, 2, "fork")
    loader.load_state_dict(state)
    return loader


def test_stale_state_is_not_ignored_silently(dataset_dir: Path) -> None:
    loader = _loader(streamx, dataset_dir, 0)
    _ids(loader)
    state = {
        "epoch": 0,
        "sample_in_epoch": 16,
        "num_canonical_nodes": 1,
        "shuffle_seed": 9176,
        "initial_physical_nodes": 1,
    }
    loader.load_state_dict(state)
    loader.dataset.next_epoch = 1  # epoch 0 already ran: the state is stale
    with pytest.warns(UserWarning, match="Ignoring the loaded state dict"):
        _ids(loader)
