"""``XSVWriter`` and its fixed-separator forms ``CSVWriter`` and ``TSVWriter``."""

from __future__ import annotations

from typing import Any

from streamx.format.encodings import SPLIT_ENCODINGS
from streamx.format.writers.base import column_value, document_writer_args
from streamx.format.writers.split import SplitWriter

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]


@document_writer_args
class XSVWriter(SplitWriter):
    """Writes a streaming dataset of separated values, with no quoting.

    Each shard is ``shard.NNNNN.xsv`` (a header line of column names, then one line per
    sample) plus its ``.meta`` offsets file.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        separator: The field separator; it may not occur in names or values.
        newline: Line terminator; it may not occur in names or values.
        <writer arguments>

    Raises:
        ValueError: For an unsupported column encoding, a column name containing the
            separator or newline, an invalid compression, hash list, size limit, ``out``
            tuple or unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.

    Examples:
        >>> import os, tempfile
        >>> from streamx import XSVWriter
        >>> out = tempfile.mkdtemp()
        >>> with XSVWriter(out=out, columns={"id": "int"}, separator="|") as writer:
        ...     writer.write({"id": 7})
        >>> sorted(os.listdir(out))
        ['index.json', 'shard.00000.xsv', 'shard.00000.xsv.meta']
    """

    format = "xsv"
    separator: str

    def __init__(
        self,
        *,
        columns: dict[str, str],
        separator: str,
        newline: str = "\n",
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
        self.columns = columns
        self.column_names = sorted(columns)
        self.column_encodings = [columns[name] for name in self.column_names]
        for name, encoding in zip(self.column_names, self.column_encodings):
            _check_text(f"column name {name!r}", name, separator, newline)
            if encoding not in SPLIT_ENCODINGS:
                raise ValueError(f"Column {name}: unsupported XSV encoding {encoding!r}.")
        self.separator = separator
        self.newline = newline
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

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Returns the columns joined by the separator, as one line.

        Raises:
            KeyError: If a column is missing.
            ValueError: If a value's text contains the separator or newline.
        """
        values = []
        for name in self.column_names:
            text = str(column_value(sample, name, self.column_names))
            _check_text(f"column {name} value", text, self.separator, self.newline)
            values.append(text)
        return (self.separator.join(values) + self.newline).encode("utf-8")

    def _data_header(self) -> bytes:
        return (self.separator.join(self.column_names) + self.newline).encode("utf-8")

    def get_config(self) -> dict[str, Any]:
        """Returns the settings stored in every meta file and index entry."""
        config = super().get_config()
        config.update(
            {
                "column_names": self.column_names,
                "column_encodings": self.column_encodings,
                "separator": self.separator,
                "newline": self.newline,
            }
        )
        return config


class _FixedSeparatorWriter(XSVWriter):
    """An XSV writer whose format name implies the separator, so it is not recorded."""

    separator = ""

    def __init__(
        self,
        *,
        columns: dict[str, str],
        newline: str = "\n",
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
            columns=columns,
            separator=type(self).separator,
            newline=newline,
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

    def get_config(self) -> dict[str, Any]:
        """Returns the XSV settings without ``separator``."""
        config = super().get_config()
        del config["separator"]
        return config


@document_writer_args
class CSVWriter(_FixedSeparatorWriter):
    """Writes comma-separated values, with no quoting: ``shard.NNNNN.csv`` + ``.csv.meta``.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        newline: Line terminator; it may not occur in names or values, nor may ``,``.
        <writer arguments>

    Raises:
        ValueError: For an unsupported column encoding, a column name containing ``,`` or
            the newline, an invalid compression, hash list, size limit, ``out`` tuple or
            unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.

    Examples:
        >>> import tempfile
        >>> from streamx import CSVWriter
        >>> out = tempfile.mkdtemp()
        >>> with CSVWriter(out=out, columns={"id": "int", "name": "str"}) as writer:
        ...     writer.write({"id": 1, "name": "a"})
        >>> open(f"{out}/shard.00000.csv").read()
        'id,name\\n1,a\\n'
    """

    format = "csv"
    separator = ","


@document_writer_args
class TSVWriter(_FixedSeparatorWriter):
    """Writes tab-separated values, with no quoting: ``shard.NNNNN.tsv`` + ``.tsv.meta``.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        newline: Line terminator; it may not occur in names or values, nor may a tab.
        <writer arguments>

    Raises:
        ValueError: For an unsupported column encoding, a column name containing a tab or
            the newline, an invalid compression, hash list, size limit, ``out`` tuple or
            unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.

    Examples:
        >>> import tempfile
        >>> from streamx import TSVWriter
        >>> out = tempfile.mkdtemp()
        >>> with TSVWriter(out=out, columns={"id": "int", "name": "str"}) as writer:
        ...     writer.write({"id": 1, "name": "a"})
        >>> open(f"{out}/shard.00000.tsv").read()
        'id\\tname\\n1\\ta\\n'
    """

    format = "tsv"
    separator = "\t"


def _check_text(what: str, text: str, separator: str, newline: str) -> None:
    if separator in text or newline in text:
        raise ValueError(f"The {what} contains the separator or newline: {text!r}.")
