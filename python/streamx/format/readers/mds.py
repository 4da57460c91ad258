"""Reads MDS samples through the Rust core: one memory map per shard, no syscall per sample."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from streamx import _core
from streamx.exceptions import CorruptShardError
from streamx.format.columns import ColumnPlan
from streamx.format.index import ShardInfo, ShardList
from streamx.format.readers.batch_columns import Columns, batch_layout, gather
from streamx.format.readers.views import ShardViews

__all__ = ["MDSSampleReader"]


class MDSSampleReader:
    """Decodes byte-level columns in Rust and Python-object columns (PIL, pickle, ...) here.

    Args:
        shards: The MDS shards of one dataset, in order; their files are opened lazily.
        zero_copy: Hand out ``bytes`` columns as read-only ``memoryview``s and static-shape
            ``ndarray`` columns as read-only arrays over the shards' memory maps, without
            copying (uncompressed shards; see :mod:`streamx.format.readers.views`).

    Raises:
        ValueError: If a shard's encodings name no registered encoding.

    Reading raises ``FileNotFoundError`` for a shard not on disk, ``IndexError`` for an id
    outside ``0..num_samples`` and ``CorruptShardError`` for bytes that contradict the
    shard's header or the index.

    Examples:
        >>> import tempfile
        >>> from streamx import MDSWriter
        >>> from streamx.format.index import parse_index
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"x": "int"}) as writer:
        ...     writer.write({"x": 5})
        >>> MDSSampleReader(parse_index(out, None, f"{out}/index.json")).get(0)
        {'x': 5}
    """

    def __init__(self, shards: Sequence[ShardInfo], *, zero_copy: bool = False) -> None:
        if isinstance(shards, ShardList):
            plans, core = _from_indexes(shards)
        else:
            plans, core = _from_shards(shards)
        self._core = core
        self.num_samples = self._core.num_samples
        self._plans = plans
        # Set when every column has a fixed width or is bytes or str: a batch is then read
        # column by column.
        self.batch_layout = None if zero_copy else batch_layout(plans)
        decoders = {p.python_columns for p in plans}
        # One schema's decoders serve every sample when all shards agree (the usual case).
        self._decoders = plans[0].python_columns if len(decoders) == 1 and plans else None
        # With nothing to decode in Python, the Rust reader alone serves ``ds[i]``.
        self.fast_get: Callable[[int], dict[str, Any] | None] | None = (
            self._core.get_item_if_local if decoders <= {()} and not zero_copy else None
        )
        self._shards = shards
        self._zero_copy = zero_copy
        self._views: dict[int, ShardViews] = {}

    def get(self, index: int) -> dict[str, Any]:
        """Returns sample ``index`` with every column decoded."""
        if self._zero_copy:
            return self._get_view(index)
        return self._decoded_in_place(index, self._core.get(index))

    def get_if_local(self, index: int) -> dict[str, Any] | None:
        """Sample ``index``, or ``None`` while its shard is not on local disk."""
        if self._zero_copy:
            try:
                return self._get_view(index)
            except FileNotFoundError:  # views map the file in Python
                return None
        sample = self._core.get_if_local(index)
        return None if sample is None else self._decoded_in_place(index, sample)

    def _decoded_in_place(self, index: int, sample: dict[str, Any]) -> dict[str, Any]:
        """``sample`` (as Rust read it) with its Python-object columns decoded."""
        decoders = self._decoders
        if decoders is None:
            decoders = self._plans_for(index)
        self._decode(index, sample, decoders)
        return sample

    def get_many(self, indices: list[int], fallback: Any) -> list[Any]:
        """Decodes many samples in one call into Rust; ``fallback(i)`` serves any sample whose
        shard is not local yet (it downloads), keeping the order."""
        if self._zero_copy:
            try:
                return [self._get_view(i) for i in indices]
            except FileNotFoundError:  # views map the file in Python
                return [fallback(i) for i in indices]
        samples = self._core.get_many_if_local(indices)
        if samples is None:
            return [fallback(i) for i in indices]
        decoders = self._decoders
        if decoders == ():
            return samples
        for position, sample in enumerate(samples):
            columns = decoders if decoders is not None else self._plans_for(indices[position])
            self._decode(indices[position], sample, columns)
        return samples

    def python_columns(self) -> list[tuple[str, Any]]:
        """``(column, coder)`` of every column some shard decodes in Python, all schemas."""
        return [column for plan in self._plans for column in plan.python_columns]

    def get_columns(self, indices: list[int]) -> Columns | None:
        """Samples ``indices`` as one array or list per column (only when
        :attr:`batch_layout` is set), or ``None`` while a shard of theirs is not on disk."""
        assert self.batch_layout is not None
        return gather(self._core, self.batch_layout, indices)

    def _plans_for(self, index: int) -> tuple[tuple[str, Any], ...]:
        shard, _ = self._core.locate(index)
        return self._plans[self._core.schema_id(shard)].python_columns

    def _get_view(self, index: int) -> dict[str, Any]:
        shard, local = self._core.locate(index)
        views = self._views.get(shard)
        if views is None:
            info = self._shards[shard]
            if info.compression:  # decompressed by the Rust reader: copied, not viewed
                return self._decoded(index)
            plan = self._plans[self._core.schema_id(shard)]
            views = ShardViews(info.local_path(info.raw_data), plan, info.samples)
            self._views[shard] = views
        return views.get(local)

    def _decoded(self, index: int) -> dict[str, Any]:
        sample = self._core.get(index)
        self._decode(index, sample, self._plans_for(index))
        return sample

    def _decode(
        self, index: int, sample: dict[str, Any], columns: Sequence[tuple[str, Any]]
    ) -> None:
        """Decodes the Python-object columns of sample ``index`` in place.

        Raises:
            CorruptShardError: If a value does not decode, naming the shard file, the sample
                and the column (the coder's own error is its cause).
        """
        for name, coder in columns:
            try:
                sample[name] = coder.decode(sample[name])
            except Exception as err:
                raise self._undecodable(index, name, err) from err

    def _undecodable(self, index: int, column: str, err: Exception) -> CorruptShardError:
        shard, local = self._core.locate(index)
        info = self._shards[shard]
        encodings = dict(zip(info.column_names, info.column_encodings))
        return CorruptShardError(
            f"Corrupt sample in shard {info.local_path(info.raw_data)}: sample {local} of the "
            f"shard (dataset sample {index}), column {column!r} "
            f"({encodings.get(column, '?')}) does not decode: {type(err).__name__}: {err}"
        )

    def evict(self, shard: int) -> None:
        """Drops the memory map of ``shard`` (views handed out keep theirs)."""
        self._core.evict(shard)
        self._views.pop(shard, None)


def _from_indexes(shards: ShardList) -> tuple[list[ColumnPlan], _core.MDSReader]:
    """The reader over indexes read in Rust: shard descriptions never pass through Python."""
    plans: list[ColumnPlan] = []
    known: dict[tuple[Any, ...], ColumnPlan] = {}  # streams alike share one plan
    parts = []
    for part in shards.parts:
        parts.append((part.index, os.path.join(part.dirname, part.split), len(plans)))
        for schema in part.index.schemas():
            if schema is None:
                raise ValueError(f"Not an MDS shard in {part.dirname}/{part.split}.")
            key = tuple(tuple(column) for column in schema)
            if key not in known:
                known[key] = ColumnPlan.from_index(*schema)
            plans.append(known[key])
    schemas = [(p.names, p.kinds, p.sizes) for p in plans]
    return plans, _core.MDSReader(parts, schemas)


def _from_shards(shards: Sequence[ShardInfo]) -> tuple[list[ColumnPlan], _core.MDSReader]:
    plans: list[ColumnPlan] = []
    schema_of: dict[tuple[Any, ...], int] = {}
    descs = []
    for shard in shards:
        key = (
            tuple(shard.column_names),
            tuple(shard.column_encodings),
            tuple(shard.column_sizes),
        )
        if key not in schema_of:
            schema_of[key] = len(plans)
            plans.append(ColumnPlan.from_index(*key))
        zip_path = shard.local_path(shard.zip_data) if shard.zip_data else None
        descs.append(
            (
                shard.local_path(shard.raw_data),
                zip_path,
                shard.compression,
                shard.samples,
                schema_of[key],
                shard.raw_data.bytes,
            )
        )
    schemas = [(p.names, p.kinds, p.sizes) for p in plans]
    return plans, _core.MDSReader(descs, schemas)
