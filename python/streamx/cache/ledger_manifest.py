"""The files behind a cache ledger's shard ids, kept beside the ledger for ``streamx cache``.

The ledger knows shards by id only. A dataset of one stream can be named again from the
``index.json`` beside the ledger, but a dataset of several streams spreads its shards over
several directories, so the dataset writes what it registered with the ledger (each shard's
files and the sizes the index gives them) to ``<ledger>.files.json``. ``streamx cache evict``
opens the ledger with exactly those files and sizes, so it deletes what a running job would
delete and nothing else: the ledger still refuses a symlink, a file of another size, or one
that is not a regular file.

The manifest is written atomically (a private temporary file renamed into place) and only
when its content changes. It is read only when it is a regular file owned by this user and
its shape matches the ledger's shard count.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from streamx.runtime.atomic_write import write_atomic

__all__ = [
    "LedgerFiles",
    "manifest_path",
    "read_manifest",
    "write_manifest",
    "write_manifest_data",
]

_VERSION = 1
# Refuse to read a manifest larger than this: a hostile or corrupt file is never read whole.
_MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class LedgerFiles:
    """Per shard id, the files registered with the ledger and the sizes the index gives them."""

    files: list[list[str]]
    sizes: list[list[int]]


def manifest_path(ledger_path: str) -> str:
    """Where the manifest of the ledger at ``ledger_path`` lives."""
    return f"{ledger_path}.files.json"


def _encode(files: Sequence[Sequence[str]], sizes: Sequence[Sequence[int]]) -> bytes:
    doc = {"version": _VERSION, "files": files, "sizes": sizes}
    return json.dumps(doc, separators=(",", ":")).encode()


def write_manifest(
    ledger_path: str, files: Sequence[Sequence[str]], sizes: Sequence[Sequence[int]]
) -> None:
    """Records the ledger's files, unless the manifest already says exactly this."""
    write_manifest_data(ledger_path, _encode(files, sizes))


def write_manifest_data(ledger_path: str, data: bytes) -> None:
    """Records a manifest already encoded (``CacheLedger.files_manifest``), unless the
    manifest already says exactly this."""
    path = manifest_path(ledger_path)
    try:
        with open(path, "rb") as existing:
            if existing.read(len(data) + 1) == data:
                return
    except OSError:
        pass
    write_atomic(path, data, mode=0o600)  # private to this user, as the docstring says


def _shape_error(path: str, why: str) -> ValueError:
    return ValueError(f"Ledger manifest {path} is not valid: {why}")


def read_manifest(ledger_path: str, num_shards: int) -> LedgerFiles | None:
    """The manifest of the ledger at ``ledger_path``, or None where there is none.

    Raises:
        ValueError: If the manifest exists but is not a regular file of this user, is not
            valid JSON of the expected shape, or describes another number of shards.
    """
    path = manifest_path(ledger_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _shape_error(path, f"cannot open it ({e.strerror})") from e
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise _shape_error(path, "not a regular file owned by this user")
        if info.st_size > _MAX_BYTES:
            raise _shape_error(path, f"{info.st_size} bytes is larger than any manifest")
        raw = file.read()
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _shape_error(path, str(e)) from e
    if not isinstance(doc, dict) or doc.get("version") != _VERSION:
        raise _shape_error(path, f"expected version {_VERSION}")
    files, sizes = doc.get("files"), doc.get("sizes")
    if not isinstance(files, list) or not isinstance(sizes, list):
        raise _shape_error(path, "files and sizes must be lists")
    if len(files) != num_shards or len(sizes) != num_shards:
        raise _shape_error(path, f"it describes {len(files)} shards, the ledger has {num_shards}")
    for shard, (names, lengths) in enumerate(zip(files, sizes)):
        ok = (
            isinstance(names, list)
            and isinstance(lengths, list)
            and len(names) == len(lengths)
            and all(isinstance(n, str) and os.path.isabs(n) for n in names)
            and all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in lengths)
        )
        if not ok:
            raise _shape_error(path, f"bad entry for shard {shard}")
    return LedgerFiles(files, sizes)
