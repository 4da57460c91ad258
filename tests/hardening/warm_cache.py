"""A dataset of many one-sample shards with every shard already in its cache directory (a
warm cache), made fast: one shard is written, and the others are copies of its bytes."""

from __future__ import annotations

import copy
import json
from pathlib import Path


def make_warm(root: Path, shards: int) -> tuple[str, str]:
    """Writes ``shards`` shards under ``root/remote`` and the same files under
    ``root/cache``; returns ``(remote, local)``."""
    import streamx

    seed = root / "seed"
    with streamx.MDSWriter(out=str(seed), columns={"id": "int"}) as writer:
        writer.write({"id": 0})
    index = json.loads((seed / "index.json").read_text())
    entry = index["shards"][0]
    data = (seed / entry["raw_data"]["basename"]).read_bytes()
    remote, local = root / "remote", root / "cache"
    remote.mkdir()
    local.mkdir()
    entries = []
    for i in range(shards):
        name = f"shard.{i:06d}.mds"
        one = copy.deepcopy(entry)
        one["raw_data"]["basename"] = name
        entries.append(one)
        (remote / name).write_bytes(data)
        (local / name).write_bytes(data)
    text = json.dumps({"version": 2, "shards": entries})
    (remote / "index.json").write_text(text)
    (local / "index.json").write_text(text)
    return str(remote), str(local)
