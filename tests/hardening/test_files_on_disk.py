"""Files in the cache directory: an index naming the user's own files, a symlinked
sub-directory, leftovers of killed downloads, a corrupt index that must not stick, and a
shard corrupted once in transit."""

from __future__ import annotations

import gc
import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
import remote_data
from hardening_support import N

import streamx
from streamx.exceptions import ChecksumError, CorruptIndexError


def _index(path: str | Path) -> dict:  # type: ignore[type-arg]
    with open(os.path.join(path, "index.json")) as f:
        return json.load(f)  # type: ignore[no-any-return]


def test_an_index_naming_a_user_file_does_not_delete_it(remote: str, tmp_path: Path) -> None:

    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert remote_data.check(ds[0]) == 0
    del ds
    (local / "notes.txt").write_text("the user's own notes")
    # The remote is rewritten by an attacker: shard 0's compressed file is "notes.txt".
    index = _index(remote)
    index["shards"][0]["zip_data"]["basename"] = "notes.txt"
    hostile = tmp_path / "hostile"
    shutil.copytree(remote, hostile)
    (hostile / "index.json").write_text(json.dumps(index))
    os.remove(local / "index.json")
    os.remove(local / ".streamx" / "remote")
    try:
        ds = streamx.StreamingDataset(remote=str(hostile), local=str(local), batch_size=4)
        for sample in ds:
            remote_data.check(sample)
    except (CorruptIndexError, ValueError):
        pass  # refusing the index outright is fine too
    assert (local / "notes.txt").read_text() == "the user's own notes"


@pytest.mark.parametrize("same_remote", [True, False])
def test_a_user_file_of_the_exact_size_named_by_the_index_is_kept(
    remote: str, tmp_path: Path, same_remote: bool
) -> None:
    """The index names the user's own file, of exactly the size it gives, as a shard's
    compressed file next to its decompressed one: streamx did not download that file, so it
    is not dropped at construction (mosaicml-streaming keeps it too)."""
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    del ds
    gc.collect()  # its claim on `local` goes with it
    index = _index(remote)
    size = index["shards"][0]["zip_data"]["bytes"]
    notes = b"the user's own notes. " * (size // 22 + 1)
    (local / "notes.txt").write_bytes(notes[:size])
    index["shards"][0]["zip_data"]["basename"] = "notes.txt"
    if same_remote:  # the server's index rewritten in place: the same ledger
        served = Path(remote)
    else:
        served = tmp_path / "hostile"
        shutil.copytree(remote, served)
        os.remove(local / ".streamx" / "remote")
    (served / "index.json").write_text(json.dumps(index))
    os.remove(local / "index.json")
    ds = streamx.StreamingDataset(remote=str(served), local=str(local), batch_size=4)
    assert (local / "notes.txt").read_bytes() == notes[:size]
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    assert (local / "notes.txt").read_bytes() == notes[:size]


def test_no_delete_follows_a_symlinked_split_out_of_the_cache(remote: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in os.listdir(remote):
        shutil.copy(os.path.join(remote, name), outside / name)
    # Decompressed shards next to their zips: a cache would drop the zips (keep_zip=False).
    seed = streamx.StreamingDataset(remote=remote, local=str(tmp_path / "seed"), batch_size=4)
    for s in seed:
        remote_data.check(s)
    for shard in seed.shards:
        shutil.copy(tmp_path / "seed" / shard.raw_data.basename, outside / shard.raw_data.basename)
    before = sorted(os.listdir(outside))
    local = tmp_path / "cache"
    local.mkdir()
    os.symlink(outside, local / "split")
    ds = streamx.StreamingDataset(remote=remote, local=str(local), split="split", batch_size=4)
    for sample in ds:
        remote_data.check(sample)
    del ds
    # The ledger lives where the user pointed `local/split`; no file there was deleted.
    assert sorted(n for n in os.listdir(outside) if n != ".streamx") == before


def test_leftovers_of_killed_downloads_are_removed(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    zip_data = ds.shards[1].zip_data
    assert zip_data is not None  # the remote's shards are compressed
    name = zip_data.basename
    del ds
    leftovers = [
        f".{name}.99999.0123abcd.tmp",
        "shard.00002.mds.tmp.99999.3",
        f".{name}.99999.0123abcd.verify",  # staged until its digest is checked
        f"..{name}.99999.0123abcd.verify.99999.4567cdef.tmp",  # that staging's download
        f".{name}.99999.0123abcd.h1048576.99999.89abcdef.tmp",  # a hedged part's scratch
        f".{name}.99999.0123abcd.parts",  # the download's record of its landed parts
    ]
    for left in leftovers:
        (local / left).write_bytes(b"\0" * 1000)
    (local / "notes.tmp").write_text("not ours")
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    names = set(os.listdir(local))
    assert not names & set(leftovers)
    assert "notes.tmp" in names
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))


def test_a_corrupt_index_from_the_server_does_not_stick(remote: str, tmp_path: Path) -> None:
    good = (Path(remote) / "index.json").read_text()
    (Path(remote) / "index.json").write_text(good[: len(good) // 2])
    local = tmp_path / "cache"
    with pytest.raises(CorruptIndexError):
        streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert not (local / "index.json").exists()
    assert not [n for n in os.listdir(local) if n.endswith(".tmp")]
    (Path(remote) / "index.json").write_text(good)  # the server recovers
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))


def test_a_corrupt_local_index_is_fetched_again(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    local.mkdir()
    (local / "index.json").write_text('{"shards": [')
    with pytest.warns(UserWarning, match="fetching it again"):
        ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    shutil.rmtree(local)
    local.mkdir()
    (local / "index.json").write_text('{"shards": [')
    with pytest.raises(CorruptIndexError):  # no remote: nothing to fetch it from
        streamx.StreamingDataset(local=str(local), batch_size=4)


class _CorruptOnce(streamx.Stream):
    """A stream whose first fetch of each shard file arrives corrupted (same size)."""

    seen: set[str] = set()

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        path = super()._download_file(from_basename, to_basename)
        if from_basename.startswith("shard") and from_basename not in self.seen:
            self.seen.add(from_basename)
            data = bytearray(Path(path).read_bytes())
            data[len(data) // 2] ^= 0xFF
            Path(path).write_bytes(bytes(data))
        return path


def test_validate_hash_retries_a_transient_corruption(remote: str, tmp_path: Path) -> None:
    _CorruptOnce.seen = set()
    stream = _CorruptOnce(remote=remote, local=str(tmp_path / "cache"))
    ds = streamx.StreamingDataset(
        streams=[stream], batch_size=4, validate_hash="sha1", download_retry=2
    )
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    assert _CorruptOnce.seen
    _CorruptOnce.seen = set()
    once = _CorruptOnce(remote=remote, local=str(tmp_path / "cache1"))
    ds = streamx.StreamingDataset(
        streams=[once], batch_size=4, validate_hash="sha1", download_retry=1
    )
    with pytest.raises(ChecksumError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds[0]


@pytest.mark.parametrize("compression", ["zstd", None])
def test_a_shard_file_takes_its_name_only_once_its_digest_matched(
    tmp_path: Path, compression: str | None
) -> None:
    """With ``validate_hash``, a downloaded shard file waits under a staging name until its
    digest is checked: readers find shard files by name (and decompress a compressed one they
    find), so an unchecked file under its name could be served before a mismatch removed it.
    CI once caught a reader decompressing a corrupt download that way."""
    remote = str(tmp_path / "remote")
    remote_data.write(remote, N, compression=compression, size_limit=6_000)
    local = tmp_path / "cache"
    fetched: list[tuple[str, bool]] = []

    class Watched(streamx.Stream):
        def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
            path = super()._download_file(from_basename, to_basename)
            if from_basename.startswith("shard"):
                final = os.path.join(str(local), from_basename)
                fetched.append((os.path.basename(path), os.path.exists(final)))
            return path

    ds = streamx.StreamingDataset(
        streams=[Watched(remote=remote, local=str(local))], batch_size=4, validate_hash="sha1"
    )
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    assert len(fetched) == ds.num_shards
    assert all(name.endswith(".verify") and not at_final for name, at_final in fetched)
    assert not [n for n in os.listdir(local) if n.endswith((".verify", ".tmp"))]
