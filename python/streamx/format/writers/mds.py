"""``MDSWriter``: writes MDS shards byte for byte like mosaicml-streaming."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from streamx import _core
from streamx.exceptions import NeedsPythonEncoding
from streamx.format.columns import ColumnPlan
from streamx.format.encodings import get_coder
from streamx.format.writers.base import Writer

if TYPE_CHECKING:
    from typing import Unpack

    from streamx.format.writers.base import WriterOptions

__all__ = ["MDSWriter"]


class MDSWriter(Writer):
    """Writes a streaming MDS dataset.

    Args:
        columns: Column name to encoding, e.g. ``{'id': 'int', 'text': 'str'}``.
        **kwargs: ``out``, ``keep_local``, ``compression``, ``hashes``, ``size_limit`` and
            the rest of :class:`~streamx.format.writers.base.Writer`'s arguments.
    """

    format = "mds"
    extra_bytes_per_sample = 4

    def __init__(
        self,
        *,
        columns: dict[str, str],
        **kwargs: Unpack[WriterOptions],
    ) -> None:
        super().__init__(**kwargs)
        self.columns = columns
        plan = ColumnPlan.from_columns(columns)
        self._plan = plan
        self.column_names = list(plan.names)
        self.column_encodings = list(plan.encodings)
        self.column_sizes = list(plan.sizes)
        self.config_data = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        self.extra_bytes_per_shard = 4 + 4 + len(self.config_data)
        self._builder = _core.MDSShardWriter(
            self.local,
            plan.names,
            plan.kinds,
            plan.sizes,
            self.config_data,
            self.size_limit,
            self.compression,
            self.hashes,
        )

    def get_config(self) -> dict[str, Any]:
        """Returns the settings stored in every shard's header and index entry."""
        config = super().get_config()
        config["column_names"] = self.column_names
        config["column_encodings"] = self.column_encodings
        config["column_sizes"] = self.column_sizes
        return config

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Encodes one sample entirely in Python (the exact, slower path)."""
        sizes, parts = [], []
        for name, encoding, size in zip(
            self.column_names, self.column_encodings, self.column_sizes
        ):
            value = sample[name]
            datum = value if isinstance(value, bytes) else get_coder(encoding).encode(value)
            if size is None:
                sizes.append(len(datum))
            elif size != len(datum):
                raise KeyError(
                    f"Unexpected data size; was this data typed with the correct encoding "
                    f"({encoding})?"
                )
            parts.append(datum)
        head = b"".join(n.to_bytes(4, "little") for n in sizes)
        return head + b"".join(parts)

    def write(self, sample: dict[str, Any]) -> None:
        """Adds one sample; a new shard starts when ``size_limit`` would be crossed."""
        if self._plan.python_columns:
            sample = dict(sample)
            for name, coder in self._plan.python_columns:
                value = sample[name]
                if not isinstance(value, bytes):
                    sample[name] = coder.encode(value)
        try:
            shard = self._builder.write(sample)
        except NeedsPythonEncoding:
            shard = self._builder.write_encoded(self.encode_sample(sample))
        if shard is not None:
            self._on_shard(shard)

    def _on_shard(self, shard: dict[str, Any]) -> None:
        entry = dict(shard)
        entry.update(self.get_config())
        uploads = [(shard["zip_data"] or shard["raw_data"])["basename"]]
        self._add_shard(entry, uploads)

    def _flush(self) -> None:
        shard = self._builder.flush()
        if shard is not None:
            self._on_shard(shard)
