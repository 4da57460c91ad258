"""Batches of a WebDataset's samples, field by field, with no dict per sample.

The batched ``StreamingDataLoader`` path asks for whole batches of ids. Here they are
grouped by tar, each tar's samples are read from its cached copy (one read per run of
neighbouring samples, located by the tar's member table), and the batch is a dict with the
first sample's keys in its order (``__key__``, ``__url__``, then its fields as the tar holds
them), as ``default_collate`` builds it. A field whose values are class labels (``.cls``,
``.id`` and the other integer extensions) comes as one ``int64`` array, and ``.npy`` arrays
that share one header (dtype, shape and order) as one array with a row each; every other
field comes as the list of its values, decoded by the per-sample path's own
:func:`~streamx.format.webdataset.decoders.decode_field`, for the loader to collate.

A batch whose samples do not all hold the same fields, whose tars are read with different
decode options, or that holds a field that does not decode is built from the per-sample
path's samples instead, in order: ``default_collate``'s ``KeyError`` for a field the first
sample has and a later one lacks, and the first ``CorruptShardError`` the per-sample path
would meet, are then exactly its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from streamx.exceptions import CorruptShardError
from streamx.format.batch_parts import Columns, scatter, shard_parts
from streamx.format.index import ShardInfo
from streamx.format.webdataset.decoders import LABEL_EXTENSIONS, decode_field, npy_header
from streamx.format.webdataset.samples import TarSample
from streamx.format.webdataset.tar_shard import TarShardReader

__all__ = ["TarBatches"]


class _Read(NamedTuple):
    """One sample of a batch as read: its members, its tar, and its span's bytes."""

    sample: TarSample
    start: int  # where the span begins in the tar
    span: memoryview
    reader: TarShardReader

    def field(self, number: int) -> memoryview:
        member = self.sample.fields[number]
        return self.span[member.offset - self.start : member.offset - self.start + member.size]


class TarBatches:
    """Batches of a dataset whose shards are all WebDataset tars.

    Args:
        shards: The dataset's shards, in order (see :meth:`over`).
        open_tar: The reader of shard ``n`` (the dataset's own, so evicting it drops it).
    """

    def __init__(
        self, shards: Sequence[ShardInfo], open_tar: Callable[[int], TarShardReader]
    ) -> None:
        self._open = open_tar
        self._ends = np.cumsum([shard.samples for shard in shards]).tolist()

    @classmethod
    def over(
        cls, shards: Sequence[ShardInfo], open_tar: Callable[[int], TarShardReader]
    ) -> TarBatches | None:
        """The batches of ``shards``, or ``None`` unless every shard is a tar."""
        listed = list(shards)
        if not listed or any(shard.format != "wds" for shard in listed):
            return None
        return cls(listed, open_tar)

    def get_columns(self, ids: list[int]) -> Columns | None:
        """Samples ``ids`` (dataset-wide), in order, one array or list of values per key;
        ``None`` while a tar of theirs is not on local disk.

        Raises:
            IndexError: If an id lies outside the dataset.
            KeyError: If a sample lacks a field of the first, as ``default_collate`` does.
            CorruptShardError: If a tar or field does not decode, as on the per-sample path.
        """
        if not ids:
            return {}
        pieces = []
        for shard, positions, rows in shard_parts(self._ends, ids):
            try:
                reader = self._open(shard)
            except FileNotFoundError:  # evicted or not fetched yet: the miss handler's way
                return None
            spans = reader.local_spans(rows.tolist())
            if spans is None:
                return None
            pieces.append((positions, [_Read(*found, reader) for found in spans]))
        reads: list[_Read] = scatter(pieces, len(ids))
        first = reads[0]
        readers = [piece[1][0].reader for piece in pieces]
        names = readers[0].field_names()
        if names is None or any(r.field_names() != names for r in readers[1:]):
            if not _same_fields(reads):
                return _from_samples(reads)
            names = tuple(member.name for member in first.sample.fields)
        if len({reader.options for reader in readers}) != 1:
            return _from_samples(reads)
        decode, images = first.reader.options
        columns: Columns = {
            "__key__": [r.sample.key for r in reads],
            "__url__": [r.reader.url for r in reads],
        }
        try:
            for number, name in enumerate(names):
                columns[name] = _column(reads, number, name, decode, images)
        except CorruptShardError:  # the per-sample path's first error, not this field's
            _from_samples(reads)
            raise
        return columns


def _column(
    reads: list[_Read], number: int, name: str, decode: bool, images: bool
) -> np.ndarray[Any, Any] | list[Any]:
    """Field ``number`` (named ``name``) of every sample, as one array or its values."""
    if not decode:
        return [bytes(r.field(number)) for r in reads]
    extension = name.rsplit(".", 1)[-1]
    stacked = None
    if extension == "npy":
        stacked = _stacked_npy(reads, number)
    elif extension in LABEL_EXTENSIONS:
        stacked = _labels(reads, number)
    if stacked is not None:
        return stacked
    values = [
        decode_field(name, bytes(r.field(number)), images, r.reader.url, r.sample.key)
        for r in reads
    ]
    if extension in LABEL_EXTENSIONS:
        try:
            return np.array(values, np.int64)
        except OverflowError:  # past int64: default_collate refuses it, from the values
            return values
    return values


def _labels(reads: list[_Read], number: int) -> np.ndarray[Any, Any] | None:
    """The labels as ``int64``, parsed from the bytes as they are: ``int`` takes ASCII
    digits and strips ASCII whitespace, which the per-sample decoder (ASCII, then
    ``str.strip``) also does, so a value it takes is the same; ``None`` for anything else
    (a value past ``int64`` too), left to that decoder."""
    try:
        return np.array([int(r.field(number)) for r in reads], np.int64)
    except (ValueError, OverflowError):
        return None


def _stacked_npy(reads: list[_Read], number: int) -> np.ndarray[Any, Any] | None:
    """The ``.npy`` fields as one array, each copied straight into its row, when all share
    the first one's header and it holds numbers in C order; else ``None`` (then each is
    decoded on its own, and a bad one named)."""
    data = [r.field(number) for r in reads]
    head = bytes(data[0][:10])
    if head[:8] != b"\x93NUMPY\x01\x00" or len(head) < 10:
        return None  # version 2 and 3 headers are rare: each decoded on its own
    size = 10 + int.from_bytes(head[8:10], "little")
    header = bytes(data[0][:size])
    try:
        found = npy_header(header)
    except Exception:  # a header numpy refuses: named by the per-sample decoder
        return None
    if found is None:
        return None
    shape, fortran, dtype, offset = found
    # A 0-d array stays values: a batch joined from pieces would turn a row into a scalar.
    if fortran or not shape or not dtype.isnative or dtype.kind not in "biufc":
        return None
    width = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if any(len(d) < offset + width or d[:offset] != header for d in data):
        return None
    # One join copies every array's bytes into one writable buffer, in the batch's order.
    joined = bytearray().join(view[offset : offset + width] for view in data)
    return np.frombuffer(joined, dtype).reshape(len(data), *shape)


def _same_fields(reads: list[_Read]) -> bool:
    """Whether every sample holds the first one's fields, in its order."""
    names = [member.name for member in reads[0].sample.fields]
    return all(
        len(r.sample.fields) == len(names)
        and all(m.name == n for m, n in zip(r.sample.fields, names, strict=True))
        for r in reads
    )


def _from_samples(reads: list[_Read]) -> Columns:
    """The batch as the per-sample path's samples, one list of values per key of the first
    (decoded in order, so their first error is the per-sample path's)."""
    samples = [r.reader.decoded(r.sample, r.start, r.span) for r in reads]
    return {name: [sample[name] for sample in samples] for name in samples[0]}
