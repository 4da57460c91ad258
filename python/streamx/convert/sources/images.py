"""An image folder: one class per sub-directory, ``label`` = the class's index in sorted order.

Image files are stored as their original bytes (no re-encode), in a ``jpeg`` or ``png`` column
that decodes back to a PIL image, as torchvision's ``ImageFolder`` would open it. Each one is
decoded once first, so a corrupt file stops the conversion instead of a training run.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Row, chunk_ranges, with_overrides
from streamx.convert.sources.files import list_sized_files, open_fs
from streamx.convert.sources.image_check import check_image

__all__ = ["IMAGE_SUFFIXES", "ImageFolderSource"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ImageFolderSource:
    """``root/<class>/<image>`` at a local path or fsspec URL."""

    root: str
    classes: tuple[str, ...]
    files: tuple[tuple[str, int], ...]
    per_part: int | None = None
    total_bytes: int | None = None  # the images' bytes, which size the default parts

    @classmethod
    def open(cls, root: str, per_part: int | None = None) -> ImageFolderSource:
        """Lists the class directories and their images (sorted)."""
        files = list_sized_files(root, IMAGE_SUFFIXES)
        base = open_fs(root)[1].rstrip("/")
        found: list[tuple[str, str]] = []
        for name, _ in files:
            relative = posixpath.relpath(open_fs(name)[1], base)
            if "/" not in relative:
                raise ConvertError(f"Image {name} is not inside a class sub-directory of {root}.")
            found.append((relative.split("/", 1)[0], name))
        classes = tuple(sorted({label for label, _ in found}))
        index = {label: i for i, label in enumerate(classes)}
        labelled = tuple((name, index[label]) for label, name in sorted(found))
        sizes = [size for _, size in files]
        # A store that lists no sizes keeps the default of about 64 parts.
        total = sum(sizes) if all(sizes) else None
        return cls(root, classes, labelled, per_part, total)

    def describe(self) -> Mapping[str, Any]:
        return {"kind": "images", "root": self.root, "files": [f for f, _ in self.files]}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        jpeg = any(f.lower().endswith((".jpg", ".jpeg")) for f, _ in self.files)
        return with_overrides({"image": "jpeg" if jpeg else "png", "label": "int"}, overrides)

    def parts(self) -> list[Part]:
        ranges = chunk_ranges(len(self.files), self.per_part, self.total_bytes)
        return [
            Part(i, f"{self.root} (images {start} to {end - 1})", (start, end))
            for i, (start, end) in enumerate(ranges)
        ]

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        start, end = part.spec
        fs = open_fs(self.root)[0]
        for row in range(start, end):
            name, label = self.files[row]
            try:
                data = fs.cat_file(fs._strip_protocol(name))
            except Exception as err:
                raise ConvertError(f"Cannot read image {name}: {err}") from err
            check_image(data, name)
            yield name, 0, {"image": data, "label": label}
