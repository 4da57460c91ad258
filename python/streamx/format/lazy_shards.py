"""The shards of a dataset as a lazy sequence over indexes read into Rust columns.

An index of 650k shards is 200 MB of JSON. Building a :class:`ShardInfo` for every entry
took most of a dataset's construction time and gigabytes of memory, while construction and
iteration need only a few columns (sample counts, sizes, column layouts). The Rust core keeps
the entries as columns (:class:`streamx._core.ShardIndex`), this sequence hands out the
columns as numpy arrays, and builds a shard's :class:`ShardInfo` only when it is asked for
(then keeps it, so the same shard is the same object).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.format.index_entry import FileInfo, ShardInfo

__all__ = ["IndexPart", "SchemaUse", "ShardList"]


@dataclass(frozen=True)
class IndexPart:
    """One index's shards and where they live: ``dirname/split/<basename>``."""

    index: _core.ShardIndex
    dirname: str
    split: str


@dataclass(frozen=True)
class SchemaUse:
    """One distinct MDS column layout and the first shard (global id) declaring it."""

    first_shard: int
    column_names: list[str]
    column_encodings: list[str]
    column_sizes: list[int | None]


class ShardList(Sequence[ShardInfo]):
    """The shards of one or more indexes, in order; :class:`ShardInfo` built on access.

    Args:
        parts: The indexes, each with the directory its shards live in.

    Examples:
        >>> import tempfile
        >>> from streamx import MDSWriter
        >>> from streamx.format.index import parse_index
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"x": "int"}) as writer:
        ...     writer.write({"x": 1})
        >>> shards = parse_index(out, None, f"{out}/index.json")
        >>> len(shards), shards.samples.tolist(), shards[0].raw_data.basename
        (1, [1], 'shard.00000.mds')
    """

    def __init__(self, parts: Sequence[IndexPart]) -> None:
        self.parts = tuple(parts)
        self._starts = np.cumsum([0] + [len(p.index) for p in self.parts]).tolist()
        self._built: dict[int, ShardInfo] = {}

    @classmethod
    def concat(cls, lists: Sequence[ShardList]) -> ShardList:
        """The shards of ``lists``, one after the other."""
        return cls([part for shards in lists for part in shards.parts])

    def __len__(self) -> int:
        return int(self._starts[-1])

    @overload
    def __getitem__(self, key: int) -> ShardInfo: ...
    @overload
    def __getitem__(self, key: slice) -> list[ShardInfo]: ...
    def __getitem__(self, key: int | slice) -> ShardInfo | list[ShardInfo]:
        if isinstance(key, slice):
            return [self[i] for i in range(*key.indices(len(self)))]
        number = int(key)
        if number < 0:
            number += len(self)
        if not 0 <= number < len(self):
            raise IndexError(f"Shard {key} out of range for {len(self)} shards")
        shard = self._built.get(number)
        if shard is None:
            shard = self._built[number] = self._build(number)
        return shard

    def __iter__(self) -> Iterator[ShardInfo]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"ShardList({len(self)} shards from {len(self.parts)} indexes)"

    def __getstate__(self) -> dict[str, Any]:
        return {"parts": self.parts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["parts"])  # type: ignore[misc]

    def spans(self) -> list[tuple[int, IndexPart]]:
        """Each index with the global id of its first shard."""
        return [(int(start), part) for start, part in zip(self._starts, self.parts)]

    @property
    def samples(self) -> NDArray[np.int64]:
        """Samples of each shard."""
        return self._concat([p.index.samples() for p in self.parts])

    def max_sizes(self) -> NDArray[np.int64]:
        """Bytes each shard may take in a cache: raw plus compressed files."""
        return self._concat([p.index.max_sizes() for p in self.parts])

    def raw_sizes(self) -> NDArray[np.int64]:
        """Bytes of each shard's raw (uncompressed) data file."""
        return self._concat([p.index.raw_sizes() for p in self.parts])

    def formats(self) -> set[str]:
        """The formats of the shards."""
        return {f for p in self.parts for f in p.index.formats()}

    def schema_uses(self) -> list[SchemaUse]:
        """Each part's distinct MDS column layouts, in order of first use."""
        uses: list[SchemaUse] = []
        for start, part in zip(self._starts, self.parts):
            schemas = part.index.schemas()
            ids, firsts = np.unique(part.index.schema_ids(), return_index=True)
            for first, schema_id in sorted(zip(firsts.tolist(), ids.tolist())):
                schema = schemas[schema_id]
                if schema is not None:
                    uses.append(SchemaUse(start + first, *schema))
        return uses

    def _concat(self, arrays: list[NDArray[np.int64]]) -> NDArray[np.int64]:
        return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)

    def _build(self, number: int) -> ShardInfo:
        which = int(np.searchsorted(self._starts, number, side="right")) - 1
        part = self.parts[which]
        entry = part.index.entry(number - int(self._starts[which]))
        fmt, compression, hashes, samples, size_limit = entry[:5]
        raw, zipped, raw_meta, zip_meta = (_file(f) for f in entry[5:9])
        assert raw is not None  # the core refuses an entry without raw_data
        schema = part.index.schemas()[entry[9]]
        names, encodings, sizes = schema if schema is not None else ([], [], [])
        return ShardInfo(
            dirname=part.dirname,
            split=part.split,
            format=fmt,
            compression=compression,
            hashes=hashes,
            samples=samples,
            size_limit=size_limit,
            raw_data=raw,
            zip_data=zipped,
            column_names=names,
            column_encodings=encodings,
            column_sizes=sizes,
            raw_meta=raw_meta,
            zip_meta=zip_meta,
            extra=json.loads(entry[10]) if entry[10] else {},
        )


def _file(info: tuple[str, int, list[tuple[str, str]]] | None) -> FileInfo | None:
    if info is None:
        return None
    basename, size, hashes = info
    return FileInfo(basename=basename, bytes=size, hashes=dict(hashes))
