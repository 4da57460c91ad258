"""WebDataset tars stream in the order an MDS dataset of the same shard sizes gives: the
same shuffles, resumption, mixing with MDS, random access, cache limit and workers. Local
tars are read where they lie; the tests of fetching and evicting copies serve the tars
from nginx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import write_mds_like
from wds_data import write_tars

from streamx import Stream, StreamingDataLoader, StreamingDataset, WebDatasetStream
from streamx.order.settings import ShuffleAlgo

SIZES = [16, 16, 9, 16, 1, 16, 13]  # samples per tar (and per MDS shard)
TOTAL = sum(SIZES)


def _ids(ds: StreamingDataset, limit: int | None = None) -> list[int]:
    out = []
    for sample in ds:
        out.append(int(sample["cls"] if "cls" in sample else sample["id"]))
        if limit is not None and len(out) == limit:
            break
    return out


@pytest.fixture
def source(tmp_path: Path) -> tuple[str, str]:
    write_tars(str(tmp_path / "tars"), SIZES)
    write_mds_like(str(tmp_path / "mds"), SIZES)
    return str(tmp_path / "tars"), str(tmp_path / "mds")


def _stream(tars: str, local: Path, **kwargs: Any) -> WebDatasetStream:
    return WebDatasetStream(remote=tars, local=str(local), **kwargs)


@pytest.fixture
def served(source: tuple[str, str]) -> Iterator[str]:
    """The tars over HTTP (a server that cannot list: named by braces), fetched as copies."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    with Nginx(Path(source[0])) as server:
        yield f"{server.endpoint}/shard-{{0000..{len(SIZES) - 1:04d}}}.tar"


@pytest.mark.parametrize("algo", ["py1e", "py1br", "py1s", "naive"])
@pytest.mark.parametrize("nodes", [1, 3])
def test_order_equals_mds(
    source: tuple[str, str], tmp_path: Path, algo: ShuffleAlgo, nodes: int
) -> None:
    tars, mds = source
    kwargs: dict[str, Any] = {"shuffle": True, "shuffle_seed": 7, "shuffle_algo": algo}
    ours = StreamingDataset(
        streams=[_stream(tars, tmp_path / "c")], num_canonical_nodes=nodes, batch_size=4, **kwargs
    )
    reference = StreamingDataset(local=mds, num_canonical_nodes=nodes, batch_size=4, **kwargs)
    assert ours.samples_per_shard.tolist() == SIZES
    got = _ids(ours)
    assert got == _ids(reference)
    assert set(got) == set(range(TOTAL))


def test_resume_mid_epoch_through_a_json_state(source: tuple[str, str], tmp_path: Path) -> None:
    tars, _ = source

    def make() -> StreamingDataset:
        stream = _stream(tars, tmp_path / "c")
        return StreamingDataset(streams=[stream], shuffle=True, shuffle_seed=3, batch_size=5)

    full = _ids(make())
    partial = make()
    head = _ids(partial, limit=35)
    state = json.loads(json.dumps(partial.state_dict(35, False)))
    resumed = make()
    resumed.load_state_dict(state)
    assert head + _ids(resumed) == full


def test_mixed_with_mds(source: tuple[str, str], tmp_path: Path) -> None:
    tars, mds = source
    streams = [_stream(tars, tmp_path / "c"), Stream(local=mds)]
    ds = StreamingDataset(streams=streams, shuffle=True, shuffle_seed=1, batch_size=4)
    assert ds.num_samples == 2 * TOTAL
    samples = list(ds)
    from_tars = [s for s in samples if "__key__" in s]
    assert len(from_tars) == TOTAL and len(samples) == 2 * TOTAL
    assert all(s["txt"] == f"row {s['cls']}" for s in from_tars)
    assert sorted(_ids_of(samples)) == sorted(list(range(TOTAL)) * 2)


def _ids_of(samples: list[dict[str, Any]]) -> list[int]:
    return [int(s["cls"] if "cls" in s else s["id"]) for s in samples]


@pytest.mark.remote
def test_random_access_fetches_only_the_tar_it_needs(served: str, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    ds = StreamingDataset(streams=[_stream(served, cache)])
    assert not list(cache.glob("shard-*.tar"))
    assert ds[60]["cls"] == 60 and ds[60]["__key__"] == "sample-00060"
    assert [p.name.split("-")[1] for p in cache.glob("shard-*.tar")] == [
        "0005"
    ]  # tars of 16, 16, 9, 16, 1: sample 60 is in the sixth
    assert [ds[i]["cls"] for i in (0, TOTAL - 1, 41, 57)] == [0, TOTAL - 1, 41, 57]


@pytest.mark.remote
def test_cache_limit_evicts_whole_tars(
    source: tuple[str, str], served: str, tmp_path: Path
) -> None:
    cache = tmp_path / "c"
    largest = max(p.stat().st_size for p in Path(source[0]).iterdir())
    limit = 4 * largest + 4096  # the least a limit may be, as for MDS
    ds = StreamingDataset(streams=[_stream(served, cache)], cache_limit=limit, batch_size=4)
    assert sorted(_ids(ds)) == list(range(TOTAL))
    kept = list(cache.glob("shard-*.tar"))
    assert 0 < len(kept) < len(SIZES)
    assert sum(p.stat().st_size for p in kept) <= limit


@pytest.mark.remote
def test_a_cached_tar_deleted_mid_epoch_is_fetched_again(served: str, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    ds = StreamingDataset(streams=[_stream(served, cache)], batch_size=4)
    assert ds[3]["cls"] == 3
    for path in cache.glob("shard-*.tar"):
        path.unlink()
    assert sorted(_ids(ds)) == list(range(TOTAL))


def test_member_tables_are_read_once(source: tuple[str, str], tmp_path: Path) -> None:
    tars, _ = source
    StreamingDataset(streams=[_stream(tars, tmp_path / "c")])
    tables = tmp_path / "c" / "streamx-wds"
    first = {p.name: p.stat().st_mtime_ns for p in tables.iterdir()}
    assert len(first) == len(SIZES)
    again = StreamingDataset(streams=[_stream(tars, tmp_path / "c")])
    assert again.num_samples == TOTAL
    assert {p.name: p.stat().st_mtime_ns for p in tables.iterdir()} == first


def _as_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return batch


def test_dataloader_workers(source: tuple[str, str], tmp_path: Path) -> None:
    tars, _ = source
    ds = StreamingDataset(
        streams=[_stream(tars, tmp_path / "c")], shuffle=True, shuffle_seed=5, batch_size=4
    )
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, collate_fn=_as_list)
    ids = [int(s["cls"]) for batch in loader for s in batch]
    assert sorted(ids) == list(range(TOTAL))
    assert all(len(s["npy"]) == s["cls"] % 4 + 1 for batch in loader for s in batch)
