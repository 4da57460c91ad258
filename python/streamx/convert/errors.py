"""The converter's one error class: bad input, named by file and row."""

from __future__ import annotations

from streamx.exceptions import StreamxError

__all__ = ["ConvertError"]


class ConvertError(StreamxError, ValueError):
    """An input the converter cannot turn into MDS: an unreadable file, a row that does not
    fit its column, a destination it cannot write to, or a resume against a different plan.

    The message names the input file (or part) and, for a row, its number in that file.
    """
