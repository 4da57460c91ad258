"""Members grouped into samples as WebDataset groups them.

A member ``dir/abc.seg.jpg`` belongs to the sample keyed ``dir/abc`` under the field
``seg.jpg``: the key runs to the first dot of the file name. Consecutive members with one
key form one sample. Members without a dot in their file name and ``__*__`` metadata
files at the top level are not samples' fields, as in WebDataset.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from streamx.exceptions import CorruptShardError
from streamx.format.webdataset.tar_members import Member

__all__ = ["Field", "TarSample", "group_samples"]

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


def _is_metadata(name: str) -> bool:
    return "/" not in name and name.startswith("__") and name.endswith("__")


def group_samples(members: Sequence[Member], shown: str) -> list[TarSample]:
    """The archive's samples in order.

    Raises:
        CorruptShardError: If one sample holds the same field twice (naming the member).
    """
    samples: list[TarSample] = []
    key: str | None = None
    fields: dict[str, Field] = {}
    for member in members:
        found = _KEY_AND_FIELD.match(member.name)
        if found is None or _is_metadata(member.name):
            continue
        member_key, name = found.group(1), found.group(2).lower()
        if member_key != key:
            if key is not None:
                samples.append(TarSample(key, tuple(fields.values())))
            key, fields = member_key, {}
        if name in fields:
            raise CorruptShardError(
                f"{shown}: the sample {member_key!r} holds {name!r} twice ({member.name})"
            )
        fields[name] = Field(name, member.offset, member.size)
    if key is not None:
        samples.append(TarSample(key, tuple(fields.values())))
    return samples
