"""Local WebDataset tars are read where they lie, as ``wids`` reads them: nothing but their
member tables lands in the cache directory, the samples are those of copies fetched over
HTTP, a tar changed since its table was read is refused by name (a new dataset reads it
again), and no eviction ever deletes one, whatever the ``cache_limit``."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from wds_data import tar_bytes, write_tars

from streamx import StreamingDataset, WebDatasetStream
from streamx.exceptions import StaleIndexError
from streamx.format.held_file import MAX_OPEN

SIZES = [16, 16, 9, 16, 1, 16, 13]  # samples per tar
TOTAL = sum(SIZES)


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    stream = WebDatasetStream(remote=remote, local=str(local))
    return StreamingDataset(streams=[stream], batch_size=4, **kwargs)


def _files(folder: Path) -> dict[str, int]:
    """Every file under ``folder``: its path relative to it, and its size."""
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.tar")}


@pytest.fixture
def tars(tmp_path: Path) -> Path:
    write_tars(str(tmp_path / "tars"), SIZES)
    return tmp_path / "tars"


def test_nothing_but_member_tables_lands_in_the_cache(tars: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    ds = _dataset(str(tars), cache, shuffle=True, shuffle_seed=2)
    assert sorted(int(s["cls"]) for s in ds) == list(range(TOTAL))
    assert [ds[i]["cls"] for i in (60, 0, TOTAL - 1)] == [60, 0, TOTAL - 1]
    assert ds[60]["__url__"] == str(tars / "shard-0005.tar")
    files = _files(cache)
    tables = [name for name in files if name.startswith("streamx-wds/")]
    assert len(tables) == len(SIZES)
    assert not [name for name in files if name.endswith(".tar")]
    # Beside the tables: the manifest and the cache directory's claim, a few hundred bytes.
    others = {name: size for name, size in files.items() if name not in tables}
    assert sum(others.values()) < 4096, others
    assert ds.cache_usage == os.path.getsize(cache / "streamx-wds.json")
    assert not ds.streams[0].copies_into_cache


@pytest.fixture
def served(tars: Path) -> Iterator[str]:
    """The same tars over HTTP (named by braces: nginx cannot list), fetched as copies."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    with Nginx(tars) as server:
        yield f"{server.endpoint}/shard-{{0000..{len(SIZES) - 1:04d}}}.tar"


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    return all(
        np.array_equal(v, b[k]) and type(v) is type(b[k])
        if isinstance(v, np.ndarray)
        else (v == b[k] and type(v) is type(b[k]))
        for k, v in a.items()
        if k != "__url__"
    )


@pytest.mark.remote
def test_shuffled_samples_equal_the_fetched_copies(tars: Path, served: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"shuffle": True, "shuffle_seed": 9, "num_canonical_nodes": 2}
    ours = list(_dataset(str(tars), tmp_path / "a", **kwargs))
    copied_ds = _dataset(served, tmp_path / "b", **kwargs)
    copied = list(copied_ds)
    assert len(ours) == len(copied) and {int(s["cls"]) for s in ours} == set(range(TOTAL))
    assert all(_same(a, b) for a, b in zip(ours, copied, strict=True))
    assert [int(s["cls"]) for s in ours] != sorted(int(s["cls"]) for s in ours)  # shuffled
    assert len(list((tmp_path / "b").glob("shard-*.tar"))) == len(SIZES)  # remote: copies


def _rewrite_same_size(path: Path) -> None:
    """Another sample's text in place of one (the same length): the size stays, the mtime
    is moved past the file system's timestamp granularity."""
    data = path.read_bytes()
    changed = data.replace(b"row 48", b"row 99", 1)
    assert changed != data and len(changed) == len(data)
    before = path.stat().st_mtime_ns
    with open(path, "r+b") as f:  # in place: a reader holding the file open sees it
        f.write(changed)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def test_a_tar_rewritten_at_the_same_size_is_refused_then_read_anew(
    tars: Path, tmp_path: Path
) -> None:
    ds = _dataset(str(tars), tmp_path / "c")
    assert ds[49]["txt"] == "row 49" and ds[60]["txt"] == "row 60"  # shards 3 and 5 open
    _rewrite_same_size(tars / "shard-0003.tar")  # samples 41..56
    os.utime(tars / "shard-0001.tar")  # not opened yet: only its mtime moves
    with pytest.raises(StaleIndexError, match=r"shard-0003\.tar: the file changed"):
        ds[48]  # the open reader checks after its read
    with pytest.raises(StaleIndexError, match=r"shard-0001\.tar: the file changed"):
        ds[20]  # a reader opened now checks first
    assert ds[60]["txt"] == "row 60"  # the others read on
    again = _dataset(str(tars), tmp_path / "c")  # the tables are read again
    assert again[48]["txt"] == "row 99" and again[48]["cls"] == 48
    assert again[20]["txt"] == "row 20"


def test_a_resized_tar_is_refused_then_read_anew(tars: Path, tmp_path: Path) -> None:
    ds = _dataset(str(tars), tmp_path / "c")
    assert ds[TOTAL - 1]["cls"] == TOTAL - 1
    last = tars / f"shard-{len(SIZES) - 1:04d}.tar"
    start = TOTAL - SIZES[-1]
    last.write_bytes(tar_bytes(range(start, start + SIZES[-1] + 2)))  # two samples more
    with pytest.raises(StaleIndexError, match=r"shard-0006\.tar: the file changed .*size"):
        ds[TOTAL - 1]
    again = _dataset(str(tars), tmp_path / "c")
    assert again.num_samples == TOTAL + 2 and again[TOTAL + 1]["cls"] == TOTAL + 1


def test_a_missing_local_tar_is_named(tars: Path, tmp_path: Path) -> None:
    ds = _dataset(str(tars), tmp_path / "c")
    (tars / "shard-0002.tar").unlink()
    with pytest.raises(FileNotFoundError, match=r"shard-0002\.tar"):
        ds[33]
    with pytest.raises(FileNotFoundError, match=r"shard-0002\.tar"):
        ds.prepare_shard(2)


@pytest.mark.remote
def test_a_cache_limit_never_deletes_local_tars(tmp_path: Path) -> None:
    """Local tars beside remote ones under a limit that holds four tars: the remote copies
    are evicted, the local tars neither counted nor touched."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    local_tars = tmp_path / "mine"
    write_tars(str(local_tars), [16, 8, 16])
    write_tars(str(tmp_path / "served"), SIZES)
    mine = _digests(local_tars)
    with Nginx(tmp_path / "served") as server:
        url = f"{server.endpoint}/shard-{{0000..{len(SIZES) - 1:04d}}}.tar"

        def make(limit: int | None) -> StreamingDataset:
            streams = [
                WebDatasetStream(remote=str(local_tars), local=str(tmp_path / "c1")),
                WebDatasetStream(remote=url, local=str(tmp_path / "c2")),
            ]
            kwargs: dict[str, Any] = {"cache_limit": limit} if limit else {}
            return StreamingDataset(
                streams=streams, batch_size=4, shuffle=True, shuffle_seed=1, **kwargs
            )

        probe = make(None)
        largest = max(int(s.raw_data.bytes) for s in probe.shards)
        manifests = probe.cache_usage  # nothing fetched yet
        limit = 4 * largest + manifests + 64
        ds = make(limit)
        for _ in range(2):
            assert sorted(int(s["cls"]) for s in ds) == sorted(list(range(40)) + list(range(TOTAL)))
        kept = list((tmp_path / "c2").glob("shard-*.tar"))
        assert 0 < len(kept) < len(SIZES)
        # Counted: the copies and the two manifests, not a byte of the local tars.
        assert ds.cache_usage == sum(p.stat().st_size for p in kept) + manifests
        assert ds.cache_usage <= limit
        with pytest.raises(ValueError, match="never evicted"):
            ds.evict_shard(0)  # a local tar
        while True:
            try:
                ds.evict_coldest_shard()
            except ValueError:
                break  # only the local tars are left: none of them is a victim
    assert _digests(local_tars) == mine
    assert not list((tmp_path / "c1").glob("*.tar"))
    assert not list((tmp_path / "c2").glob("*.tar"))


def _open_under(folder: Path) -> int:
    """How many descriptors this process holds on files under ``folder``."""
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder))
        except OSError:
            continue  # the listing's own descriptor, closed since
    return held


def test_a_process_holds_a_bounded_number_of_local_tars_open(tmp_path: Path) -> None:
    count = MAX_OPEN + 24
    write_tars(str(tmp_path / "many"), [1] * count)
    ds = _dataset(str(tmp_path / "many"), tmp_path / "c")
    order = np.random.default_rng(5).permutation(count).tolist()
    assert [ds[i]["cls"] for i in order] == order
    assert _open_under(tmp_path / "many") <= MAX_OPEN
    assert [ds[i]["cls"] for i in order] == order  # the closed ones open again
    assert _open_under(tmp_path / "many") <= MAX_OPEN
