"""Members grouped into samples as WebDataset groups them.

A member ``dir/abc.seg.jpg`` belongs to the sample keyed ``dir/abc`` under the field
``seg.jpg``: the key runs to the first dot of the file name. Consecutive members with one
key form one sample. Members without a dot in their file name and ``__*__`` metadata
files at the top level are not samples' fields, as in WebDataset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from streamx.exceptions import CorruptShardError
from streamx.format.webdataset.tar_members import Member

__all__ = ["Field", "SampleGrouper", "TableColumns", "TarSample", "group_columns", "group_samples"]

_KEY_AND_FIELD = re.compile(r"^((?:.*/|)[^./]+)\.([^/]*)$")


@dataclass(frozen=True)
class Field:
    """One field of a sample: its extension (lower-cased) and its bytes in the tar."""

    name: str
    offset: int
    size: int


@dataclass(frozen=True)
class TarSample:
    key: str
    fields: tuple[Field, ...]


@dataclass
class TableColumns:
    """Samples as columns: sample ``i`` holds fields ``first[i]:first[i + 1]``."""

    keys: list[str] = field(default_factory=list)
    first: list[int] = field(default_factory=lambda: [0])
    names: list[str] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


def _is_metadata(name: str) -> bool:
    return "/" not in name and name.startswith("__") and name.endswith("__")


class SampleGrouper:
    """Members fed one at a time, in archive order, into samples: :meth:`add` hands back a
    sample once a member of the next one shows it is complete, :meth:`finish` the last."""

    def __init__(self, shown: str) -> None:
        self._shown = shown
        self._key: str | None = None
        self._fields: dict[str, Field] = {}

    def add(self, member: Member) -> TarSample | None:
        """Takes ``member``; returns the sample it completes, if any.

        Raises:
            CorruptShardError: If one sample holds the same field twice (naming the member).
        """
        found = _KEY_AND_FIELD.match(member.name)
        if found is None or _is_metadata(member.name):
            return None
        member_key, name = found.group(1), found.group(2).lower()
        done = None
        if member_key != self._key:
            done = self.finish()
            self._key = member_key
        if name in self._fields:
            raise CorruptShardError(
                f"{self._shown}: the sample {member_key!r} holds {name!r} twice ({member.name})"
            )
        self._fields[name] = Field(name, member.offset, member.size)
        return done

    def finish(self) -> TarSample | None:
        """The sample being grouped, if any (the archive ended, or its next member began)."""
        if self._key is None:
            return None
        sample = TarSample(self._key, tuple(self._fields.values()))
        self._key, self._fields = None, {}
        return sample


def group_samples(members: Iterable[Member], shown: str) -> list[TarSample]:
    """The archive's samples in order.

    Raises:
        CorruptShardError: If one sample holds the same field twice (naming the member).
    """
    grouper = SampleGrouper(shown)
    samples = [s for s in map(grouper.add, members) if s is not None]
    last = grouper.finish()
    return samples if last is None else [*samples, last]


def group_columns(rows: Iterable[tuple[str, int, int]], shown: str) -> TableColumns:
    """The archive's samples from its ``(name, offset, size)`` rows, as columns: what
    :func:`group_samples` gives, without an object per member or sample.

    Raises:
        CorruptShardError: As :func:`group_samples`.
    """
    out = TableColumns()
    match, keys, first, names = _KEY_AND_FIELD.match, out.keys, out.first, out.names
    offsets, sizes = out.offsets, out.sizes
    key: str | None = None
    held: set[str] = set()
    for name, offset, size in rows:
        found = match(name)
        if found is None or _is_metadata(name):
            continue
        member_key, field_name = found.group(1), found.group(2).lower()
        if member_key != key:
            if key is not None:
                first.append(len(names))
            key, held = member_key, set()
            keys.append(member_key)
        if field_name in held:
            raise CorruptShardError(
                f"{shown}: the sample {member_key!r} holds {field_name!r} twice ({name})"
            )
        held.add(field_name)
        names.append(field_name)
        offsets.append(offset)
        sizes.append(size)
    if key is not None:
        first.append(len(names))
    return out
