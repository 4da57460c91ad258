"""Eviction deletes a shard's files only while they are still the ones streamx put there:
regular files, reached without a symlink, of the size the index gives. A file planted under a
shard's name (another size) or a symlink swapped in for it is left alone, and so is whatever
the link points at."""

from __future__ import annotations

import os
from pathlib import Path

import remote_data

import streamx


def test_eviction_leaves_planted_files_and_symlinks_alone(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    for sample in ds:
        remote_data.check(sample)
    shards = ds.shards
    names = [s.raw_data.basename for s in shards[:3]]
    assert all((local / n).stat().st_size == s.raw_data.bytes for n, s in zip(names, shards))

    (local / names[0]).write_bytes(b"planted, another size")
    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"x" * shards[1].raw_data.bytes)  # even of the right size
    os.remove(local / names[1])
    (local / names[1]).symlink_to(precious)

    for shard_id in range(3):
        ds.evict_shard(shard_id)
    assert (local / names[0]).read_bytes() == b"planted, another size"
    assert (local / names[1]).is_symlink()
    assert precious.read_bytes() == b"x" * shards[1].raw_data.bytes
    assert not (local / names[2]).exists()  # a shard of ours is deleted as before
