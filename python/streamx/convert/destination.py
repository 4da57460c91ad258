"""Where a conversion writes, and what a crash leaves there.

Layout: ``<out>/part-00000/``, ``<out>/part-00001/``, ... (one MDS dataset per part) and,
last of all, ``<out>/index.json`` merged from theirs. Until that index exists nothing is a
readable dataset, so a reader never sees a half-written conversion.

A part counts as done once its own ``index.json`` exists: locally a part is written in
``<out>/.streamx-convert/`` and renamed into place whole; on a remote the part's writer
uploads its index after every shard. A crash therefore leaves finished parts, which a rerun
keeps, and at most some unfinished files, which the rerun overwrites or removes.

``<out>/.streamx-convert.json`` records the plan (input, columns, settings, parts) while a
conversion is unfinished; a rerun with a different plan is refused rather than mixing two
conversions' parts. It is removed after the merge.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.format.writers.base import write_atomic
from streamx.location import INDEX_BASENAME, Location
from streamx.storage.download import download_file
from streamx.storage.filesystems import get_filesystem
from streamx.storage.merge_index import merge_index
from streamx.storage.upload import upload_file

__all__ = ["Destination", "part_name"]

PLAN_BASENAME = ".streamx-convert.json"
STAGING = ".streamx-convert"


def part_name(index: int) -> str:
    """The sub-directory of part ``index``."""
    return f"part-{index:05d}"


class Destination:
    """A local directory or remote URL receiving one conversion."""

    def __init__(self, out: str) -> None:
        where = Location.parse(out)
        self.out = out.rstrip("/")
        self.remote = where.is_remote
        if not self.remote:
            self.out = os.path.abspath(where.local_path)

    def begin(self, plan: Mapping[str, Any]) -> set[int]:
        """Records ``plan`` (or checks it matches the recorded one) and returns the indexes of
        the parts already done.

        Raises:
            ConvertError: The destination already holds a finished dataset, another plan's
                parts, or cannot be written (e.g. a remote without credentials).
        """
        text = json.dumps(plan, sort_keys=True, default=str)
        try:
            recorded = self._read(PLAN_BASENAME)
            if recorded is None:
                if self._read(INDEX_BASENAME) is not None or self._has_files():
                    raise ConvertError(
                        f"{self.out} already holds files (a finished dataset?); convert into "
                        "an empty location."
                    )
                self._write(PLAN_BASENAME, text)
                if self._read(PLAN_BASENAME) != text:  # a store that took the write unsigned
                    raise ConvertError(f"{self.out}: the plan written there reads back wrong.")
            elif recorded != text:
                raise ConvertError(
                    f"{self.out} holds an unfinished conversion of a different input or "
                    f"settings ({PLAN_BASENAME}); delete it or convert elsewhere."
                )
            return {i for i in range(len(plan["parts"])) if self._part_done(i)}
        except ConvertError:
            raise
        except Exception as err:
            raise ConvertError(f"Cannot write to {self.out}: {type(err).__name__}: {err}") from err

    def part_out(self, index: int) -> str:
        """Where part ``index``'s writer writes: a staging directory, or the remote part."""
        if self.remote:
            return f"{self.out}/{part_name(index)}"
        staging = os.path.join(self.out, STAGING)
        os.makedirs(staging, exist_ok=True)
        return tempfile.mkdtemp(prefix=f"{part_name(index)}.", dir=staging)

    def commit_part(self, index: int, written: str) -> None:
        """Makes a finished part visible (a rename for local output; a remote part already is)."""
        if not self.remote:
            os.replace(written, os.path.join(self.out, part_name(index)))

    def finish(self, num_parts: int) -> None:
        """Merges the parts' indexes into ``<out>/index.json`` and drops the plan."""
        indexes = [f"{self.out}/{part_name(i)}/{INDEX_BASENAME}" for i in range(num_parts)]
        if self.remote:
            merge_index(list(indexes), self.out, keep_local=False)
            fs, path = get_filesystem(f"{self.out}/{PLAN_BASENAME}")
            fs.rm_file(path)
        else:
            merge_index(list(indexes), self.out)
            shutil.rmtree(os.path.join(self.out, STAGING), ignore_errors=True)
            os.remove(os.path.join(self.out, PLAN_BASENAME))

    def discard_staging(self) -> None:
        """Removes unfinished local parts a crash left behind."""
        if not self.remote:
            shutil.rmtree(os.path.join(self.out, STAGING), ignore_errors=True)

    def _part_done(self, index: int) -> bool:
        return self._exists(f"{part_name(index)}/{INDEX_BASENAME}")

    def _has_files(self) -> bool:
        if self.remote:
            fs, path = get_filesystem(self.out)
            return bool(fs.exists(path) and fs.find(path, maxdepth=1))
        return os.path.isdir(self.out) and bool(os.listdir(self.out))

    def _exists(self, relative: str) -> bool:
        if self.remote:
            fs, path = get_filesystem(f"{self.out}/{relative}")
            return bool(fs.exists(path))
        return os.path.exists(os.path.join(self.out, relative))

    def _read(self, relative: str) -> str | None:
        """The file's text, or ``None`` if it does not exist. A remote read goes through
        streamx's downloads, whose errors say where credentials were looked for."""
        if not self.remote:
            path = os.path.join(self.out, relative)
            if not os.path.exists(path):
                return None
            with open(path, encoding="utf-8") as f:
                return f.read()
        with tempfile.TemporaryDirectory(prefix="streamx-convert-") as scratch:
            local = os.path.join(scratch, "file")
            try:
                download_file(f"{self.out}/{relative}", local, retry=1)
            except FileNotFoundError:
                return None
            with open(local, encoding="utf-8") as f:
                return f.read()

    def _write(self, relative: str, text: str) -> None:
        if not self.remote:
            os.makedirs(self.out, exist_ok=True)
            write_atomic(os.path.join(self.out, relative), text.encode("utf-8"))
            return
        with tempfile.TemporaryDirectory(prefix="streamx-convert-") as scratch:
            local = os.path.join(scratch, "plan.json")
            write_atomic(local, text.encode("utf-8"))
            upload_file(local, f"{self.out}/{relative}")
