"""Finding a node's cache ledgers and naming their shards, for ``streamx cache``.

A ``StreamingDataset`` keeps its ledger in ``<local>/<split>/.streamx/ledger-<key>-<shards>``
of its first stream with a remote. The ledger knows shards only by id. A dataset of several
streams writes the files it registered beside the ledger (``<ledger>.files.json``, see
:mod:`streamx.cache.ledger_manifest`); a single-stream dataset's ids map to the shards of
the ``index.json`` beside ``.streamx``. Either gives eviction the files and the sizes the
index gives them; a ledger with neither is shown by id and not changed from here.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import stat
import time
from dataclasses import dataclass, field

from streamx import _core
from streamx.cache.cached_files import ledger_entries
from streamx.cache.ledger_manifest import read_manifest
from streamx.cli.ledger_types import LedgerSnapshot
from streamx.format.index import INDEX_BASENAME, parse_index

__all__ = ["LedgerView", "dead_temp_files", "find_ledgers", "pid_alive"]

_LEDGER = re.compile(r"^ledger-[0-9a-f]+-\d+$")
# Partial downloads: ``.<name>.<pid>.<8 hex>.tmp`` (streamx.storage.download.temp_path_for),
# and the records of their landed parts beside them, ``….parts`` and its staging
# ``….parts.new`` (streamx.storage.landed_parts).
_TEMP = re.compile(r"^\.(.+)\.\d+\.[0-9a-f]{8}\.(tmp|parts|parts\.new)$")
# A hedged part's scratch file, ``<its download's .tmp less .tmp>.h<start>.<pid>.<8 hex>.tmp``
# (streamx.storage.hedge.scratch_path): it goes with that download's file.
_SCRATCH = re.compile(r"^(\.(.+)\.\d+\.[0-9a-f]{8})\.h\d+\.\d+\.[0-9a-f]{8}\.tmp$")
# A temporary file younger than this may belong to a download that has not locked it yet.
_TEMP_GRACE_S = 60.0


@dataclass
class LedgerView:
    """One ledger as read now, with its shards' files where they can be named."""

    path: str
    home: str
    snapshot: LedgerSnapshot
    files: list[list[str]] | None = field(default=None)
    sizes: list[list[int]] | None = field(default=None)
    # Why the shards cannot be named, when a manifest is there but not valid.
    problem: str | None = None

    @property
    def num_shards(self) -> int:
        return len(self.snapshot["shards"])

    def name(self, shard: int) -> str:
        """The shard's first file (relative to the ledger's directory when inside it), or
        ``#<id>`` when the ledger's shards cannot be named or the shard has no cached files."""
        if self.files is None or not self.files[shard]:
            return f"#{shard}"
        path = self.files[shard][0]
        inside = path.startswith(self._real_home + os.sep)
        return os.path.relpath(path, self._real_home) if inside else path

    @functools.cached_property
    def _real_home(self) -> str:
        # Resolved once: `ls` names every shard, and the files are registered by real path.
        return os.path.realpath(self.home)

    def open(self) -> _core.CacheLedger:
        """The ledger for changes (keeps its limit; undoes dead processes' work on open).

        Raises:
            ValueError: If its shards cannot be named, so their files could not be deleted.
        """
        if self.files is None and self.problem is not None:
            raise ValueError(f"cannot name the shards of {self.path}: {self.problem}")
        if self.files is None:
            raise ValueError(
                f"cannot name the shards of {self.path} (no file manifest beside it and no "
                f"{INDEX_BASENAME} with {self.num_shards} shards in {self.home}); not changing it"
            )
        return _core.CacheLedger(
            self.path, self.num_shards, self.snapshot["limit"], self.files, self.sizes
        )

    def recover(self) -> None:
        """Releases pins and downloads of dead processes (deletes no shard file)."""
        ledger = _core.CacheLedger(self.path, self.num_shards, self.snapshot["limit"])
        ledger.recover()  # opening recovered already; this names the intent


def _resolve(view: LedgerView) -> None:
    """Names the ledger's shards from its manifest, else from the index beside it."""
    try:
        manifest = read_manifest(view.path, view.num_shards)
    except ValueError as e:
        view.problem = str(e)  # shown and refused at `evict`; reading still works
        return
    if manifest is not None:
        view.files, view.sizes = manifest.files, manifest.sizes
        return
    index = os.path.join(view.home, INDEX_BASENAME)
    with contextlib.suppress(FileNotFoundError, ValueError):
        shards = parse_index(view.home, "", index)
        if len(shards) == view.num_shards:
            entries = [ledger_entries(s) for s in shards]
            view.files = [[path for path, _ in e] for e in entries]
            view.sizes = [[size for _, size in e] for e in entries]


def find_ledgers(root: str) -> list[LedgerView]:
    """Every ledger under ``root`` (the cache directory, or one of its splits).

    Raises:
        FileNotFoundError: If ``root`` is not a directory.
    """
    if not os.path.isdir(root):
        raise FileNotFoundError(f"No such cache directory: {root}")
    views = []
    for dirpath, dirnames, filenames in os.walk(os.path.abspath(root)):
        if os.path.basename(dirpath) != ".streamx":
            continue
        dirnames.clear()
        for name in sorted(filenames):
            if _LEDGER.match(name):
                path = os.path.join(dirpath, name)
                view = LedgerView(path, os.path.dirname(dirpath), _core.ledger_snapshot(path))
                _resolve(view)
                views.append(view)
    return sorted(views, key=lambda v: v.path)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _abandoned(path: str) -> bool:
    """Whether no live download owns the temporary file ``path``: its downloader holds a
    ``flock`` on it (``streamx.storage.download``) until it ends, however it ends, so the
    lock can be taken only once it is gone; pids tell nothing across pid namespaces. A
    file that is too young may not be locked yet."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < _TEMP_GRACE_S:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a live owner (or no locks here: keep everything)
    finally:
        os.close(fd)
    return True


def _record_abandoned(path: str, tmp: str) -> bool:
    """Whether no live download owns ``path``, a record of landed parts or a hedge's scratch
    file of the download whose temporary file is ``tmp``. Its owner makes it once ``tmp``
    exists and removes it when ``tmp`` goes or moments after: a complete download removes
    its record just after renaming ``tmp`` into place (a kill in between leaves the record
    beside the whole file), and a cancelled hedge drops its scratch file as its thread ends.
    So while ``tmp`` is there its lock tells; once it is gone, a file untouched for the
    grace period is an orphan."""
    if os.path.lexists(tmp):
        return _abandoned(tmp)
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime >= _TEMP_GRACE_S


def dead_temp_files(view: LedgerView) -> list[str]:
    """Partial downloads under the ledger's directory that no live process owns: only
    names streamx gives a download of a file it knows (a shard file of the ledger, or the
    index), never a user's file that merely looks like one."""
    known = {os.path.join(view.home, INDEX_BASENAME)}
    for paths in view.files or []:
        known.update(paths)
    found = []
    for dirpath, dirnames, filenames in os.walk(view.home):
        dirnames[:] = [d for d in dirnames if d != ".streamx"]
        for name in filenames:
            dead = _dead_temp(dirpath, name, known)
            if dead is not None:
                found.append(dead)
    return sorted(found)


def _dead_temp(dirpath: str, name: str, known: set[str]) -> str | None:
    """The path of ``name`` if it is a dead download's temporary, record or scratch file
    of a file in ``known``."""
    scratch = _SCRATCH.match(name)
    match = _TEMP.match(name) if scratch is None else scratch
    if match is None:
        return None
    path = os.path.join(dirpath, name)
    target = match.group(2) if scratch is not None else match.group(1)
    owned = os.path.join(os.path.realpath(dirpath), target) in known
    if not owned and os.path.join(dirpath, target) not in known:
        return None
    if scratch is not None:
        dead = _record_abandoned(path, os.path.join(dirpath, f"{scratch.group(1)}.tmp"))
    elif match.group(2) == "tmp":
        dead = _abandoned(path)
    else:
        dead = _record_abandoned(path, path[: path.rindex(".parts")] + ".tmp")
    return path if dead else None
