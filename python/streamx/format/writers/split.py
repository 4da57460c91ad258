"""Writers whose shards are a data file plus a ``.meta`` offsets file (JSON, CSV, TSV, XSV)."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from streamx import _core
from streamx.format.writers.base import Writer, write_atomic

__all__ = ["SplitWriter"]


class SplitWriter(Writer):
    """Buffers encoded lines and writes each shard as ``shard.N.<fmt>`` + ``.meta``.

    Subclasses set ``columns`` before calling ``super().__init__`` and implement
    :meth:`encode_sample`. Arguments are :class:`~streamx.format.writers.base.Writer`'s.
    """

    columns: dict[str, str]
    new_samples: list[bytes]
    # mosaicml-streaming's size accounting: split shards charge nothing beyond the lines.
    extra_bytes_per_shard = 0
    extra_bytes_per_sample = 0

    def _reset_cache(self) -> None:
        self.new_samples = []
        self._shard_bytes = 0

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Returns one sample as one line of the data file."""
        raise NotImplementedError

    def _data_header(self) -> bytes:
        """Bytes at the start of every data file (the column header for XSV)."""
        return b""

    def write(self, sample: dict[str, Any]) -> None:
        """Adds one sample; a new shard starts when ``size_limit`` would be crossed.

        Args:
            sample: Column name to value. Keys beyond the columns are dropped, with one
                warning per writer naming them.

        Raises:
            KeyError: If a column is missing from ``sample``.
            TypeError: If a value's type does not fit its column (JSON).
            ValueError: If a value contains the separator or newline (XSV).
            UploadFailedError: If an earlier background upload failed.
        """
        self._check_jobs()
        if len(sample) > len(self.columns):
            self._warn_unknown_keys(sample, self.columns)
        line = self.encode_sample(sample)
        if self.size_limit and self.size_limit < self._shard_bytes + len(line):
            self._write_shard()  # even an empty one, as mosaicml-streaming does
        self.new_samples.append(line)
        self._shard_bytes += len(line)

    def encode_split_shard(self) -> tuple[bytes, bytes]:
        """Returns the (data file, meta file) bytes the pending samples would form.

        The meta file is the sample count, the ``count + 1`` u32 line offsets into the data
        file, then the writer's JSON config.
        """
        header = self._data_header()
        offsets = [len(header)]
        for line in self.new_samples:
            offsets.append(offsets[-1] + len(line))
        config = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        meta = struct.pack(f"<I{len(offsets)}I", len(self.new_samples), *offsets) + config
        return header + b"".join(self.new_samples), meta

    def flush_shard(self) -> None:
        """Writes the pending samples as a shard now and queues its upload; a no-op when
        none are pending."""
        if self.new_samples:
            self._write_shard()

    def _write_shard(self) -> None:
        data, meta = self.encode_split_shard()
        base = f"shard.{len(self.shards):05}.{self.format}"
        raw_data, zip_data = self._store(data, base)
        raw_meta, zip_meta = self._store(meta, base + ".meta")
        entry = {
            "samples": len(self.new_samples),
            "raw_data": raw_data,
            "zip_data": zip_data,
            "raw_meta": raw_meta,
            "zip_meta": zip_meta,
        }
        entry.update(self.get_config())
        uploads = [(zip_data or raw_data)["basename"], (zip_meta or raw_meta)["basename"]]
        self._reset_cache()
        self._add_shard(entry, uploads)

    def _store(self, raw: bytes, basename: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Hashes ``raw``; writes it, or only its compressed form when compressing."""
        raw_info = _file_info(basename, raw, self.hashes)
        if not self.compression:
            write_atomic(os.path.join(self.local, basename), raw)
            return raw_info, None
        packed = _core.compress(self.compression, raw)
        zip_name = f"{basename}.{_core.compression_extension(self.compression)}"
        write_atomic(os.path.join(self.local, zip_name), packed)
        return raw_info, _file_info(zip_name, packed, self.hashes)


def _file_info(basename: str, data: bytes, hashes: list[str]) -> dict[str, Any]:
    digests = {algo: _core.hexdigest(algo, data) for algo in hashes}
    return {"basename": basename, "bytes": len(data), "hashes": digests}
