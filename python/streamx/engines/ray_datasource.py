"""A Ray Data datasource reading MDS datasets: one read task per group of shards.

The driver reads ``index.json`` only; each read task fetches its own shards (for a remote
dataset, into a temporary directory it removes afterwards) and yields one pandas block per
shard, decoded by streamx's reader as ``StreamingDataset`` would decode it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence

import pandas as pd
import ray.data
from ray.data.block import Block, BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from streamx.format.index import INDEX_BASENAME, ShardInfo, parse_index
from streamx.format.readers import make_reader
from streamx.location import Location
from streamx.storage.download import download_file, download_index

__all__ = ["MDSDatasource", "read_mds"]


class MDSDatasource(Datasource):
    """The MDS dataset at `path` (a local directory or a remote URL) as a Ray datasource.

    Args:
        path: The dataset's root, holding ``index.json``.
        split: A sub-directory of `path` holding the index, if any.

    Raises:
        FileNotFoundError: if there is no index at `path`.
        CorruptIndexError: if the index cannot be parsed.
    """

    def __init__(self, path: str, *, split: str | None = None) -> None:
        self.root = os.path.join(path, split) if split else path
        # Only the shard list is kept; each read task fetches the index again for itself.
        scratch = tempfile.mkdtemp(prefix="streamx-ray-index-")
        try:
            self.shards = _load_shards(self.root, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def estimate_inmemory_data_size(self) -> int | None:
        """The shards' uncompressed bytes."""
        return sum(shard.raw_data.bytes for shard in self.shards)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: object = None
    ) -> list[ReadTask]:
        """Split the shards into at most `parallelism` contiguous groups, one task each."""
        count = len(self.shards)
        groups = max(1, min(parallelism, count))
        bounds = [count * i // groups for i in range(groups + 1)]
        tasks = []
        for begin, end in itertools.pairwise(bounds):
            if begin == end:
                continue
            shards = self.shards[begin:end]
            meta = BlockMetadata(
                num_rows=sum(s.samples for s in shards),
                size_bytes=sum(s.raw_data.bytes for s in shards),
                input_files=None,
                exec_stats=None,
            )
            tasks.append(ReadTask(_reader(self.root, begin, end), meta))
        return tasks


def read_mds(
    path: str, *, split: str | None = None, override_num_blocks: int | None = None
) -> ray.data.Dataset:
    """Read an MDS dataset (written by streamx or mosaicml-streaming) as a Ray Dataset.

    Samples keep the dataset's order; each column holds what ``StreamingDataset`` would
    return for it (``ndarray`` columns as numpy arrays, images as PIL images).

    Args:
        path: A local directory or a remote URL (``s3://...``) holding ``index.json``.
        split: A sub-directory of `path` holding the index, if any.
        override_num_blocks: Number of read tasks (at most one per shard).

    Raises:
        FileNotFoundError: if there is no index at `path`.

    Examples:
        >>> from streamx.ray import read_mds
        >>> ds = read_mds("s3://bucket/mds")  # doctest: +SKIP
        >>> ds.take(1)  # doctest: +SKIP
        [{'id': 0, 'text': '0'}]
    """
    source = MDSDatasource(path, split=split)
    dataset: ray.data.Dataset = ray.data.read_datasource(
        source, override_num_blocks=override_num_blocks
    )
    return dataset


def _load_shards(root: str, scratch: str) -> Sequence[ShardInfo]:
    """The dataset's shards, with their files expected under `scratch` when remote."""
    where = Location.parse(root)
    if not where.is_remote:
        local = where.local_path
        return parse_index(local, None, os.path.join(local, INDEX_BASENAME))
    index = os.path.join(scratch, INDEX_BASENAME)
    download_index(f"{root.rstrip('/')}/{INDEX_BASENAME}", index)
    return parse_index(scratch, None, index)


def _reader(root: str, begin: int, end: int) -> Callable[[], Iterator[Block]]:
    def read() -> Iterator[Block]:
        scratch = tempfile.mkdtemp(prefix="streamx-ray-read-")
        try:
            shards = _load_shards(root, scratch)[begin:end]
            if Location.parse(root).is_remote:
                for shard in shards:
                    info = shard.zip_data or shard.raw_data
                    url = f"{root.rstrip('/')}/{info.basename}"
                    download_file(url, shard.local_path(info), expected_size=info.bytes)
            reader = make_reader(shards)
            start = 0
            for shard in shards:
                ids = range(start, start + shard.samples)
                yield pd.DataFrame([reader.get(i) for i in ids])
                start += shard.samples
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    return read
