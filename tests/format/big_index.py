"""A large synthetic ``index.json`` as mosaicml-streaming writes them (``sort_keys``, its
separators): zstd shards of two columns, about 330 bytes an entry, so 650k shards make the
200 MB index of issue 13. Shared by the slow test and ``benches/bench_index.py``."""

from __future__ import annotations

import os

_ENTRY = (
    '{"column_encodings": ["str", "int"], "column_names": ["text", "id"], '
    '"column_sizes": [null, 8], "compression": "zstd", "format": "mds", "hashes": [], '
    '"raw_data": {"basename": "shard.%05d.mds", "bytes": %d, "hashes": {}}, '
    '"samples": %d, "size_limit": 67108864, "version": 2, '
    '"zip_data": {"basename": "shard.%05d.mds.zstd", "bytes": %d, "hashes": {}}}'
)


def shard_samples(shard: int) -> int:
    """Samples of shard ``shard``: 900 to 1099, varying."""
    return 900 + (shard * 7919) % 200


def write_big_index(directory: str, num_shards: int) -> str:
    """Writes ``directory/index.json`` with ``num_shards`` entries (no shard files) and
    returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "index.json")
    with open(path, "w", encoding="utf-8") as file:
        file.write('{"shards": [')
        for shard in range(num_shards):
            samples = shard_samples(shard)
            raw = 4 * (samples + 2) + 200 * samples
            if shard:
                file.write(", ")
            file.write(_ENTRY % (shard, raw, samples, shard, raw // 3))
        file.write('], "version": 2}')
    return path
