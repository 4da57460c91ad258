"""The converter's error class: bad input, named by file and row (defined with the rest in
:mod:`streamx.exceptions`)."""

from __future__ import annotations

from streamx.exceptions import ConvertError

__all__ = ["ConvertError"]
