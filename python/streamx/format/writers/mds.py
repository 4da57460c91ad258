"""``MDSWriter``: writes MDS shards byte for byte like mosaicml-streaming."""

from __future__ import annotations

import json
import logging
from typing import Any

from streamx import _core
from streamx.exceptions import ColumnTypeError, ColumnValueError, NeedsPythonEncoding
from streamx.format.columns import ColumnPlan
from streamx.format.encoding_base import Encoding
from streamx.format.encodings import get_coder, is_builtin_coder
from streamx.format.writers.base import (
    ColumnOverflowError,
    Writer,
    document_writer_args,
    raise_if_missing,
)

__all__ = ["MDSWriter"]

logger = logging.getLogger(__name__)


@document_writer_args
class MDSWriter(Writer):
    """Writes a streaming MDS dataset: ``shard.NNNNN.mds[.codec]`` files and ``index.json``.

    Byte-level columns (``bytes``, ``str``, ``int``, numerics, ``str_int``) are encoded in
    Rust; the others, and any encoding registered in ``_encodings`` over a built-in name,
    by their Python :class:`~streamx.format.encodings.Encoding`.

    Args:
        columns: Column name to encoding name, e.g. ``{'id': 'int', 'text': 'str'}``.
        <writer arguments>

    Raises:
        TypeError: If a column's encoding is not registered.
        ValueError: For an invalid compression, hash list, size limit, ``out`` tuple or
            unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.

    Examples:
        >>> import os, tempfile
        >>> from streamx import MDSWriter
        >>> out = tempfile.mkdtemp()
        >>> with MDSWriter(out=out, columns={"id": "int", "text": "str"}) as writer:
        ...     for i in range(3):
        ...         writer.write({"id": i, "text": f"sample {i}"})
        >>> sorted(os.listdir(out))
        ['index.json', 'shard.00000.mds']
    """

    format = "mds"
    extra_bytes_per_sample = 4

    def __init__(
        self,
        *,
        columns: dict[str, str],
        out: str | tuple[str, str],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: int | str | None = 1 << 26,
        progress_bar: bool = False,
        max_workers: int | None = None,
        retry: int = 2,
        exist_ok: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            progress_bar=progress_bar,
            max_workers=max_workers,
            retry=retry,
            exist_ok=exist_ok,
            **kwargs,
        )
        self.columns = columns
        plan = ColumnPlan.from_columns(columns)
        self._plan = plan
        self.column_names = list(plan.names)
        self.column_encodings = list(plan.encodings)
        self.column_sizes = list(plan.sizes)
        self.config_data = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        self.extra_bytes_per_shard = 4 + 4 + len(self.config_data)
        # Built-in ndarray columns are framed by Rust too (plain numpy arrays; it declines
        # anything else back to the Python encoder).
        kinds = [
            enc if kind == "raw" and enc.startswith("ndarray") and is_builtin_coder(enc) else kind
            for enc, kind in zip(plan.encodings, plan.kinds)
        ]
        self._num_columns = len(self.column_names)
        self._python_columns = [
            (name, coder)
            for name, coder in plan.python_columns
            if kinds[plan.names.index(name)] == "raw"
        ]
        self._builder = _core.MDSShardWriter(
            self.local,
            plan.names,
            kinds,
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
        """Encodes one sample entirely in Python (the exact, slower path).

        Args:
            sample: Column name to value; a ``bytes`` value is stored as it is.

        Returns:
            The sample's bytes: the sizes of its variable-size columns, then each column.

        Raises:
            KeyError: If a column is missing, or a fixed-size column's bytes have the wrong
                size (mosaicml-streaming's type).
            ColumnTypeError: If a value's type does not fit its column's encoding.
            ColumnValueError: If a value's content cannot be stored by the encoding.
        """
        return self._encode_sample(sample, None)

    def _encode_sample(self, sample: dict[str, Any], at: int | None) -> bytes:
        sizes, parts = [], []
        for name, encoding, size in zip(
            self.column_names, self.column_encodings, self.column_sizes
        ):
            value = sample[name]
            datum = value if isinstance(value, bytes) else _encode(name, encoding, value, at=at)
            if size is None:
                sizes.append(len(datum))
            elif size != len(datum):
                raise KeyError(
                    f"Unexpected data size; was this data typed with the correct encoding "
                    f"({encoding})?" + ("" if at is None else f" Column {name!r}, sample {at}.")
                )
            parts.append(datum)
        head = b"".join(n.to_bytes(4, "little") for n in sizes)
        return head + b"".join(parts)

    def encode_joint_shard(self) -> bytes:
        """Returns the file bytes the pending samples would form as a shard (header,
        offsets, config, samples) without writing them."""
        return self._builder.pending_shard_bytes()

    def write(self, sample: dict[str, Any]) -> None:
        """Adds one sample; a new shard starts when ``size_limit`` would be crossed.

        Args:
            sample: Column name to value. Keys beyond the columns are dropped, with one
                warning per writer naming them.

        Raises:
            KeyError: If a column is missing from ``sample``.
            ColumnTypeError: If a value's type does not fit its column's encoding (also an
                ``AttributeError``, as mosaicml-streaming raises).
            ColumnValueError: If a value's content cannot be stored by the encoding.
            UploadFailedError: If an earlier background upload failed.
            OSError: If writing an earlier shard in the background failed (raised again by
                every later call).
        """
        # The common case costs one attribute test, one length test and one Rust call.
        if self.event.is_set():
            self._check_jobs()
        if len(sample) > self._num_columns:
            self._warn_unknown_keys(sample, self.column_names)
        try:
            if self._python_columns:
                sample = self._encode_python_columns(sample)
            try:
                ready = self._builder.write(sample)
            except NeedsPythonEncoding:
                ready = self._builder.write_encoded(self._encode_failing(sample))
        except KeyError:  # name the missing column and the sample, not just the key
            raise_if_missing(sample, self.column_names, self._at())
            raise
        if ready:
            self._take_shards(self._builder.drain())

    def _encode_python_columns(self, sample: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``sample`` with the columns Rust does not encode encoded in Python."""
        sample = dict(sample)
        for name, coder in self._python_columns:
            value = sample[name]
            if not isinstance(value, bytes):
                sample[name] = _encode(name, self.columns[name], value, coder, self._at())
        return sample

    def _encode_failing(self, sample: dict[str, Any]) -> bytes:
        """Encodes a sample Rust declined, naming the sample in any error."""
        return self._encode_sample(sample, self._at())

    def _at(self) -> int:
        """The index in the dataset of the sample being written."""
        return int(self._builder.num_samples)

    def flush_shard(self) -> None:
        """Closes the pending samples as a shard now; a background thread writes it, then
        its upload is queued. A no-op when none are pending.

        Raises:
            ValueError: If the shard would reach 4 GiB (offsets are 32-bit).
            OSError: If writing an earlier shard in the background failed.
        """
        if self._builder.flush():
            self._take_shards(self._builder.drain())

    def _complete_shards(self) -> None:
        self._take_shards(self._builder.finish())

    def cancel_future_jobs(self) -> None:
        """Cancels the uploads still queued. Shards already closed are still written to the
        local directory (as mosaicml-streaming, which writes them before returning), and are
        not uploaded."""
        super().cancel_future_jobs()
        try:
            done = self._builder.finish()
        except Exception as err:  # the failure that led here is the one to report
            logger.error("A shard could not be written: %s", err)
            return
        self.shards.extend(self._entry(shard) for shard in done)

    def _take_shards(self, shards: list[dict[str, Any]]) -> None:
        for shard in shards:
            self._on_shard(shard)

    def _entry(self, shard: dict[str, Any]) -> dict[str, Any]:
        entry = dict(shard)
        entry.update(self.get_config())
        return entry

    def _on_shard(self, shard: dict[str, Any]) -> None:
        uploads = [(shard["zip_data"] or shard["raw_data"])["basename"]]
        self._add_shard(self._entry(shard), uploads)


def _encode(
    name: str,
    encoding: str,
    value: Any,
    coder: Encoding | None = None,
    at: int | None = None,
) -> bytes:
    """Encodes one column value, naming the column, encoding (and sample ``at``, when
    given) in any error."""
    where = "" if at is None else f" (sample {at})"
    try:
        return (coder or get_coder(encoding)).encode(value)
    except (AttributeError, TypeError) as err:
        raise ColumnTypeError(
            f"Column {name!r} has encoding {encoding!r}, which cannot store a value of type "
            f"{type(value).__name__}: {err}{where}"
        ) from err
    except OverflowError as err:
        raise ColumnOverflowError(
            f"Column {name!r} has encoding {encoding!r}, whose range does not hold "
            f"{value!r}: {err}{where}"
        ) from err
    except ValueError as err:
        raise ColumnValueError(
            f"Column {name!r} has encoding {encoding!r}, which cannot store this "
            f"{type(value).__name__} value: {err}{where}"
        ) from err
