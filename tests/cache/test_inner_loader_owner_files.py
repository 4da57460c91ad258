"""``PackedDataset`` and ``MixedDataset`` read through DataLoader workers of their own inner
loader (``streamx.packing.tracked``); those workers end by ``os._exit`` too, so the pass's
end releases the owner files they made in the cache ledger of every ``StreamingDataset``
under the dataset, and leaves those of owners that still live."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from owner_locks import is_held
from streamx import MixedDataset, PackedDataset, StreamingDataLoader, StreamingDataset

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.dist

N = 64
SOURCES = ("a", "b")


@pytest.fixture(scope="module")
def remotes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two remotes of token documents, several small shards each."""
    root = tmp_path_factory.mktemp("inner_owners")
    out = {}
    for s, name in enumerate(SOURCES):
        out[name] = root / name
        columns = {"id": "int", "tokens": "ndarray:int32"}
        with streamx.MDSWriter(out=str(out[name]), columns=columns, size_limit=400) as writer:
            for i in range(N):
                tokens = np.full(5 + i % 7, 1000 * (s + 1) + i, np.int32)
                writer.write({"id": i, "tokens": tokens})
    return out


def _streaming(remote: Path, local: Path) -> StreamingDataset:
    return StreamingDataset(remote=str(remote), local=str(local), batch_size=1)


def _packed(remotes: dict[str, Path], cache: Path) -> Any:
    return PackedDataset(_streaming(remotes["a"], cache / "a"), seq_len=16, buffer_size=4)


def _mixed(remotes: dict[str, Path], cache: Path) -> Any:
    sources = {name: _streaming(remotes[name], cache / name) for name in SOURCES}
    return MixedDataset(sources, {"a": 0.5, "b": 0.5}, global_batch_size=8, num_samples=N)


def _packed_mixture(remotes: dict[str, Path], cache: Path) -> Any:
    return PackedDataset(_mixed(remotes, cache), seq_len=16, buffer_size=4)


def _as_list(items: list[Any]) -> list[Any]:
    return items


def _loader(dataset: Any) -> StreamingDataLoader:
    return StreamingDataLoader(
        dataset, batch_size=4, num_workers=2, multiprocessing_context="fork", collate_fn=_as_list
    )


def _owner_files(cache: Path) -> list[Path]:
    """Every owner file under the caches of ``cache`` (one directory per source)."""
    return sorted(cache.glob("*/.streamx/owners/*"))


Build = Callable[[dict[str, Path], Path], Any]


@pytest.mark.parametrize("build", [_packed, _mixed, _packed_mixture], ids=lambda b: b.__name__)
def test_a_pass_leaves_no_file_of_its_exited_workers(
    build: Build, remotes: dict[str, Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    loader = _loader(build(remotes, cache))
    made: set[Path] = set()
    batches = 0
    for _ in loader:
        batches += 1
        made.update(_owner_files(cache))
    assert batches > 2
    assert len(made) >= 2, f"fewer owner files than workers: {made}"
    left = _owner_files(cache)
    assert all(map(is_held, left)), left  # only live owners' files are left
    if build is not _packed:  # both sources' caches were read, each by both workers
        assert {p.parents[2].name for p in made} == set(SOURCES)


def test_live_workers_of_another_loader_keep_their_files(
    remotes: dict[str, Path], tmp_path: Path
) -> None:
    """A pass ending over one dataset leaves the files of another loader's workers, alive
    mid-pass over the same cache; theirs go when their own pass ends."""
    cache = tmp_path / "cache"
    first = iter(_loader(_packed(remotes, cache)))
    next(first)
    next(first)  # both workers have read (torch deals batches round-robin)
    alive = _owner_files(cache)
    assert len(alive) >= 2 and all(map(is_held, alive)), alive
    for _ in _loader(_packed(remotes, cache)):
        pass
    left = _owner_files(cache)
    assert set(alive) <= set(left), (alive, left)
    assert all(map(is_held, left)), left
    for _ in first:
        pass
    assert all(map(is_held, _owner_files(cache)))
    assert not set(alive) & set(_owner_files(cache))


@pytest.mark.parametrize("build", [_packed, _mixed], ids=lambda b: b.__name__)
def test_a_pass_broken_out_of_leaves_no_file_of_its_workers(
    build: Build, remotes: dict[str, Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    loader = _loader(build(remotes, cache))
    passes = iter(loader)
    next(passes)
    next(passes)  # both workers have read
    made = _owner_files(cache)
    assert len(made) >= 2 and all(map(is_held, made)), made
    for _ in passes:
        break  # the same iterator, left by a break, then dropped
    del passes
    assert _owner_files(cache) == []
