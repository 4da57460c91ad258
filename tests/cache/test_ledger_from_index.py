"""A remote dataset's shard cache is set up without a walk over its shards (issue 24): the
ledger reads a shard's files from the index tables when it evicts the shard, and the cache
is checked by listing each of its directories once. These tests pin what that keeps, over
a remote served by nginx: shards already in the cache count as present and are not fetched
again, a killed download's temporary is still removed, ``cache_limit`` eviction deletes the
shards found in the cache (and nothing reached through a directory leading out of
``local``), the multi-stream manifest is what the per-shard walk wrote, and a hostile index
is refused by name."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import MDSWriter, Stream, StreamingDataset, _core
from streamx.cache.cached_files import ledger_entries
from streamx.exceptions import CorruptIndexError

pytestmark = [pytest.mark.remote, pytest.mark.timeout(120)]

SAMPLES = 100  # 10 shards of 10
BLOB = 1_000


def _write(out: Path) -> None:
    with MDSWriter(out=str(out), columns={"id": "int", "blob": "bytes"}, size_limit=11_000) as w:
        for i in range(SAMPLES):
            w.write({"id": i, "blob": bytes([i % 256]) * BLOB})


def _nest(root: Path, sub: dict[int, str]) -> None:
    """Moves shard ``i``'s file into directory ``sub[i]``, as a merged index names it."""
    index = json.loads((root / "index.json").read_text())
    for i, directory in sub.items():
        name = index["shards"][i]["raw_data"]["basename"]
        (root / directory).mkdir(exist_ok=True)
        (root / name).rename(root / directory / name)
        index["shards"][i]["raw_data"]["basename"] = f"{directory}/{name}"
    (root / "index.json").write_text(json.dumps(index))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Nginx, Path]]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    root = tmp_path_factory.mktemp("served")
    _write(root / "flat")
    _write(root / "nested")
    _nest(root / "nested", {1: "sub", 2: "sub", 4: "out"})
    with Nginx(root) as server:
        yield server, root


def _shard_names(root: Path) -> list[str]:
    index = json.loads((root / "index.json").read_text())
    return [s["raw_data"]["basename"] for s in index["shards"]]


def _fetched(server: Nginx, since: int) -> set[str]:
    """The shard files GET from the server since log entry ``since``."""
    return {e.uri.rsplit("/", 1)[-1] for e in server.log()[since:] if ".mds" in e.uri}


def test_cached_shards_count_as_present_and_are_not_fetched_again(
    served: tuple[Nginx, Path], tmp_path: Path
) -> None:
    server, root = served
    names = _shard_names(root / "flat")
    local = tmp_path / "cache"
    local.mkdir()
    for i in (1, 4):  # copied in by hand: adopted as they are
        shutil.copy(root / "flat" / names[i], local / names[i])
    temp = local / f".{names[2]}.4242.0123abcd.tmp"  # what a killed download left
    temp.write_bytes(b"partial")
    since = len(server.log())
    ds = StreamingDataset(remote=f"{server.endpoint}/flat", local=str(local), batch_size=4)
    index_bytes = (local / "index.json").stat().st_size
    cached = sum((local / names[i]).stat().st_size for i in (1, 4))
    assert ds.cache_usage == index_bytes + cached
    assert not temp.exists()
    assert sorted(int(s["id"]) for s in ds) == list(range(SAMPLES))
    fetched = _fetched(server, since)
    assert fetched == {n for i, n in enumerate(names) if i not in (1, 4)}
    # Over the warm cache: every shard counted, none fetched.
    since = len(server.log())
    again = StreamingDataset(remote=f"{server.endpoint}/flat", local=str(local), batch_size=4)
    total = sum((local / n).stat().st_size for n in names)
    assert again.cache_usage == index_bytes + total
    assert sorted(int(s["id"]) for s in again) == list(range(SAMPLES))
    assert _fetched(server, since) == set()


def _shard_bytes(local: Path) -> int:
    return sum(p.stat().st_size for p in local.rglob("*.mds"))


def test_cache_limit_evicts_the_shards_found_in_the_cache(
    served: tuple[Nginx, Path], tmp_path: Path
) -> None:
    server, root = served
    names = _shard_names(root / "flat")
    local = tmp_path / "cache"
    local.mkdir()
    for i in range(5, 10):
        shutil.copy(root / "flat" / names[i], local / names[i])
    shard = (root / "flat" / names[0]).stat().st_size
    index_bytes = (root / "flat" / "index.json").stat().st_size
    limit = index_bytes + 5 * shard + shard // 2
    ds = StreamingDataset(
        remote=f"{server.endpoint}/flat", local=str(local), batch_size=4, cache_limit=limit
    )
    assert ds.cache_usage == index_bytes + 5 * shard
    assert sorted(int(s["id"]) for s in ds) == list(range(SAMPLES))
    # Reading shards 0-4 needed room: the shards found in the cache were evicted, their
    # files deleted (a file the ledger could not name would stay, over the limit).
    assert ds.cache_usage <= limit
    assert _shard_bytes(local) == ds.cache_usage - index_bytes


def test_eviction_deletes_by_directory_part_and_never_outside_local(
    served: tuple[Nginx, Path], tmp_path: Path
) -> None:
    server, root = served
    names = _shard_names(root / "nested")
    local, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    (local / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (local / "out").symlink_to(elsewhere)  # leads out of local
    for name in names:
        target = local / name
        shutil.copy(root / "nested" / name, target)
    ds = StreamingDataset(remote=f"{server.endpoint}/nested", local=str(local), batch_size=4)
    for shard_id in range(len(names)):
        ds.evict_shard(shard_id)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.mds"))
    assert left == [f"elsewhere/{names[4].split('/')[-1]}"]
    assert ds.cache_usage == (local / "index.json").stat().st_size


def test_the_manifest_of_several_streams_is_the_per_shard_walks(
    served: tuple[Nginx, Path], tmp_path: Path
) -> None:
    server, _ = served
    streams = [
        Stream(remote=f"{server.endpoint}/{name}", local=str(tmp_path / name))
        for name in ("flat", "nested")
    ]
    ds = StreamingDataset(streams=streams, batch_size=4)
    cache = ds._shard_cache
    assert cache is not None and isinstance(cache.ledger, _core.CacheLedger)
    entries = [ledger_entries(shard) for shard in ds.shards]
    doc = {
        "version": 1,
        "files": [[path for path, _ in e] for e in entries],
        "sizes": [[size for _, size in e] for e in entries],
    }
    written = Path(f"{cache.ledger.path}.files.json").read_bytes()
    assert written == json.dumps(doc, separators=(",", ":")).encode()


def _entry(name: str) -> dict[str, object]:
    return {
        "column_encodings": ["int"], "column_names": ["id"], "column_sizes": [8],
        "compression": None, "format": "mds", "hashes": [], "samples": 1, "size_limit": None,
        "version": 2, "zip_data": None,
        "raw_data": {"basename": name, "bytes": 20, "hashes": {}},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("../escape.mds", "escapes the dataset directory"),
        (".streamx/ledger-x", "points into the cache's own .streamx/ directory"),
        ("sub/../shard.00000.mds", "is also shard 0"),
    ],
)
def test_a_hostile_remote_index_is_refused_by_name(
    served: tuple[Nginx, Path], tmp_path: Path, second: str, message: str
) -> None:
    server, root = served
    name = f"bad-{abs(hash(second))}"
    (root / name).mkdir()
    index = {"version": 2, "shards": [_entry("shard.00000.mds"), _entry(second)]}
    (root / name / "index.json").write_text(json.dumps(index))
    with pytest.raises(CorruptIndexError, match="shard 1") as err:
        StreamingDataset(remote=f"{server.endpoint}/{name}", local=str(tmp_path), batch_size=1)
    assert message in str(err.value)
    assert os.path.join(str(tmp_path), "index.json") in str(err.value)
