"""Parquet read in place: each row group is a shard (footers read by range, once)."""

from __future__ import annotations

__all__: list[str] = []
