"""Where a packed sequence comes from, so that whoever receives it can record progress
(:mod:`streamx.packing.tracked`)."""

from __future__ import annotations

from typing import Any

__all__ = ["Provenance", "Tagged"]

# (window, index of the sequence in its window, sequences in the window)
Provenance = tuple[int, int, int]
# One item of the stream (a sequence, or a token-budget list of them) and its provenance.
Tagged = tuple[list[Provenance], Any]
