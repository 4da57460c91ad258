"""Which targets are read in place (Parquet files, WebDataset tars) rather than as MDS, and
the shard sizes of such a target for the simulator.

A target is read in place when the caller says so, or, by default, when it names such
files: a ``.parquet`` or ``.tar`` file, a glob or brace notation over them, a ``.json``
wids shard index, a local directory that holds them and no ``index.json``, or a local
directory whose ``index.json`` is LitData's.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from streamx.location import Location

__all__ = ["Kind", "in_place_kind", "in_place_sizes"]

Kind = Literal["parquet", "wds", "litdata"]


def _by_suffix(target: str) -> Kind | None:
    name = target.rstrip("/")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".tar") or (name.endswith(".json") and not name.endswith("index.json")):
        return "wds"
    return None


def _is_litdata(index: str) -> bool:
    """Whether ``index`` is LitData's (``chunks`` and ``config``), not MDS's (``shards``).

    An MDS index can be large (a 10^5-shard one is tens of MB): one whose text spells
    neither key, and has no ``\\u`` escape that could spell them, is told apart from its
    bytes without a Python parse.
    """
    try:
        with open(index, "rb") as f:
            text = f.read()
    except OSError:
        return False  # the MDS path reports what is wrong with it
    if b"\\u" not in text and not (b'"chunks"' in text and b'"config"' in text):
        return False
    try:
        found = json.loads(text)
    except ValueError:
        return False
    return isinstance(found, dict) and "chunks" in found and "config" in found


def in_place_kind(target: str, given: str) -> Kind | None:
    """How ``target`` is read: ``None`` for MDS (its ``index.json``)."""
    if given in ("parquet", "wds", "litdata"):
        return given  # type: ignore[return-value]
    if given == "mds":
        return None
    found = _by_suffix(target)
    if found is not None or Location.parse(target).is_remote or not os.path.isdir(target):
        return found
    if os.path.exists(os.path.join(target, "index.json")):
        return "litdata" if _is_litdata(os.path.join(target, "index.json")) else None
    for kind, suffix in (("parquet", ".parquet"), ("wds", ".tar")):
        if glob.glob(os.path.join(glob.escape(target), "**", f"*{suffix}"), recursive=True):
            return kind  # type: ignore[return-value]
    return None


def in_place_sizes(
    target: str, kind: Kind, folder: str, timeout: float = 60.0, retry: int = 2
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Samples and bytes of each shard (row group or tar) of ``target``; footers or member
    tables are cached in ``folder``, each read given ``timeout`` seconds and ``retry``
    attempts."""
    if kind == "parquet":
        from streamx.format.parquet.index import build_index as parquet_index

        found = parquet_index(target, folder, None, timeout, retry)
        return found.samples(), found.max_sizes()
    if kind == "litdata":
        from streamx.format.litdata.index import build_index as litdata_index

        chunks = litdata_index(target, folder, timeout, retry, True)
        return chunks.samples(), chunks.max_sizes()
    from streamx.format.webdataset.index import build_index as tar_index

    tars = tar_index(target, folder, timeout, retry, True, False)
    return tars.samples(), tars.max_sizes()
