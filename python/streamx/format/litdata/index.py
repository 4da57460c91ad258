"""A LitData optimized dataset's ``index.json`` as shard entries: one shard per chunk.

``litdata.optimize`` writes chunk files (``chunk-W-N.bin``) and an ``index.json`` with the
chunks (file name, samples, bytes) and the config every chunk shares (``data_format``,
``data_spec``, ``compression``, ``encryption``, ``item_loader``). The index is fetched once
into ``local`` (as ``streamx-litdata-index.json``); each chunk is downloaded whole.

The index names no chunk's version, so a remote chunk's version (ETag, else mtime) is asked
when the index is read (one ``HEAD`` each, side by side): a chunk rewritten since, even to
the same size, is then refused by name before any byte of it is read (by range or whole).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from streamx.exceptions import CorruptIndexError
from streamx.format.litdata.leaves import leaf_decoder
from streamx.format.litdata.pytree import parse_spec
from streamx.format.remote_files import read_json_bounded, stat_file
from streamx.format.unit_index import UnitIndex
from streamx.location import Location
from streamx.runtime.atomic_write import write_atomic

__all__ = ["MANIFEST", "LitDataIndex", "build_index"]

logger = logging.getLogger(__name__)

MANIFEST = "streamx-litdata-index.json"
# An index lists chunks, not samples: bounded so a wrong file cannot exhaust memory.
_MAX_INDEX = 256 << 20
# Chunks asked for their version side by side (one round trip each).
_STAT_THREADS = 16


@dataclass(frozen=True)
class Chunk:
    """One chunk file: its URL, samples and bytes."""

    url: str
    rows: int
    nbytes: int
    basename: str
    formats: tuple[str, ...]
    spec: str
    allow_pickle: bool
    # Its version when the index was read ("": unknown, e.g. a local chunk: not checked).
    version: str = ""


class LitDataIndex(UnitIndex[Chunk]):
    """Chunks as shards (format ``litdata``)."""

    format = "litdata"

    def extra(self, unit: Chunk) -> dict[str, Any]:
        return {
            "source": unit.url,
            "data_format": list(unit.formats),
            "data_spec": unit.spec,
            "allow_pickle": unit.allow_pickle,
            "version": unit.version,
        }


def _fetch(source: str, folder: str, timeout: float, retry: int) -> dict[str, Any]:
    url = f"{source.rstrip('/')}/index.json"
    index, text = read_json_bounded(url, _MAX_INDEX, "a LitData index", timeout, retry)
    if not isinstance(index, dict) or not isinstance(index.get("chunks"), list):
        raise CorruptIndexError(f"{url} is not a LitData index: no `chunks` list")
    if not isinstance(index.get("config"), dict):
        raise CorruptIndexError(f"{url} is not a LitData index: no `config`")
    os.makedirs(folder, exist_ok=True)
    write_atomic(os.path.join(folder, MANIFEST), text)
    return index


def _config(url: str, config: dict[str, Any], allow_pickle: bool) -> tuple[list[str], str]:
    """The leaf formats and the spec, checked: what is not read in place is refused here,
    before the epoch, naming the setting."""
    loader = config.get("item_loader")
    if loader not in (None, "PyTreeLoader"):
        raise ValueError(f"{url}: chunks of LitData's {loader} are not read in place")
    if config.get("encryption"):
        raise ValueError(f"{url}: encrypted LitData chunks are not read in place")
    if config.get("compression"):
        raise ValueError(
            f"{url}: LitData chunks compressed with {config['compression']} are not read in "
            "place yet"
        )
    formats = config.get("data_format")
    spec = config.get("data_spec")
    if not isinstance(formats, list) or not isinstance(spec, str):
        raise CorruptIndexError(f"{url}: its config lacks data_format or data_spec")
    for name in formats:
        try:
            leaf_decoder(str(name), allow_pickle)
        except ValueError as err:
            raise ValueError(f"{url}: {err}") from err
    if parse_spec(spec, url).leaves != len(formats):
        raise CorruptIndexError(f"{url}: data_spec and data_format count different leaves")
    return [str(n) for n in formats], spec


def build_index(
    source: str, folder: str, timeout: float, retry: int, allow_pickle: bool
) -> LitDataIndex:
    """The chunks of the LitData dataset at ``source``, one shard each.

    Raises:
        FileNotFoundError: If ``source`` has no ``index.json``.
        CorruptIndexError: If the index is not LitData's, or contradicts itself.
        ValueError: If the dataset uses a format, loader, compression or encryption that is
            not read in place, naming it.
    """
    url = f"{source.rstrip('/')}/index.json"
    index = _fetch(source, folder, timeout, retry)
    formats, spec = _config(url, index["config"], allow_pickle)
    chunks: list[Chunk] = []
    for number, entry in enumerate(index["chunks"]):
        name = entry.get("filename") if isinstance(entry, dict) else None
        rows = entry.get("chunk_size") if isinstance(entry, dict) else None
        size = entry.get("chunk_bytes") if isinstance(entry, dict) else None
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            raise CorruptIndexError(f"{url}, chunk {number}: a bad file name {name!r}")
        if not isinstance(rows, int) or rows < 0 or not isinstance(size, int) or size < 0:
            raise CorruptIndexError(
                f"{url}, chunk {number}: chunk_size and chunk_bytes must be counts"
            )
        if 4 * (rows + 2) > size:  # a chunk opens with a count and rows + 1 offsets
            raise CorruptIndexError(
                f"{url}, chunk {number}: {rows} samples cannot fit in {size} bytes"
            )
        if rows:
            chunks.append(
                Chunk(
                    f"{source.rstrip('/')}/{name}",
                    rows,
                    size,
                    name,
                    tuple(formats),
                    spec,
                    allow_pickle,
                )
            )
    return LitDataIndex(_with_versions(source, chunks))


def _with_versions(source: str, chunks: list[Chunk]) -> list[Chunk]:
    """The chunks with their versions now, for a remote source (best effort: a chunk that
    cannot be asked keeps none, and its read reports what is wrong)."""
    if not chunks or not Location.parse(source).is_remote:
        return chunks

    def version(chunk: Chunk) -> Chunk:
        try:
            return replace(chunk, version=stat_file(chunk.url).version)
        except OSError as err:
            logger.debug("%s: no version (%r); its rewrite is not checked", chunk.url, err)
            return chunk

    with ThreadPoolExecutor(min(_STAT_THREADS, len(chunks))) as pool:
        return list(pool.map(version, chunks))
