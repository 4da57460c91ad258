"""``XSVWriter`` and its fixed-separator forms ``CSVWriter`` and ``TSVWriter``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamx.format.writers.split import SplitWriter

if TYPE_CHECKING:
    from typing import Unpack

    from streamx.format.writers.base import WriterOptions

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]

XSV_ENCODINGS = ("str", "int", "float")


class XSVWriter(SplitWriter):
    """Writes a streaming dataset of separated values, with no quoting.

    Args:
        columns: Column name to ``'str'``, ``'int'`` or ``'float'``.
        separator: The field separator; it may not occur in names or values.
        newline: Line terminator; it may not occur in names or values.
        **kwargs: ``out``, ``keep_local``, ``compression``, ``hashes``, ``size_limit`` and
            the rest of :class:`~streamx.format.writers.base.Writer`'s arguments.
    """

    format = "xsv"

    def __init__(
        self,
        *,
        columns: dict[str, str],
        separator: str,
        newline: str = "\n",
        **kwargs: Unpack[WriterOptions],
    ) -> None:
        self.columns = columns
        self.column_names = sorted(columns)
        self.column_encodings = [columns[name] for name in self.column_names]
        for name, encoding in zip(self.column_names, self.column_encodings):
            _check_text(f"column name {name!r}", name, separator, newline)
            if encoding not in XSV_ENCODINGS:
                raise ValueError(f"Column {name}: unsupported XSV encoding {encoding!r}.")
        self.separator = separator
        self.newline = newline
        super().__init__(**kwargs)

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Returns the columns joined by the separator, as one line."""
        values = []
        for name in self.column_names:
            text = str(sample[name])
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

    fixed_separator = ""

    def __init__(
        self, *, columns: dict[str, str], newline: str = "\n", **kwargs: Unpack[WriterOptions]
    ) -> None:
        super().__init__(columns=columns, separator=self.fixed_separator, newline=newline, **kwargs)

    def get_config(self) -> dict[str, Any]:
        """Returns the XSV settings without ``separator``."""
        config = super().get_config()
        del config["separator"]
        return config


class CSVWriter(_FixedSeparatorWriter):
    """Writes comma-separated values. Arguments as :class:`XSVWriter`, without ``separator``."""

    format = "csv"
    fixed_separator = ","


class TSVWriter(_FixedSeparatorWriter):
    """Writes tab-separated values. Arguments as :class:`XSVWriter`, without ``separator``."""

    format = "tsv"
    fixed_separator = "\t"


def _check_text(what: str, text: str, separator: str, newline: str) -> None:
    if separator in text or newline in text:
        raise ValueError(f"The {what} contains the separator or newline: {text!r}.")
