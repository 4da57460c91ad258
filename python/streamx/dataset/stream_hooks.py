"""A stream as the file-fetching helpers see it: the cache's view plus the two hooks
mosaicml-streaming's subclasses override. Typed here, not as :class:`streamx.Stream`, so
the helpers ``Stream`` calls do not import ``Stream`` back."""

from __future__ import annotations

from typing import Protocol

from streamx.cache.views import CachedStream
from streamx.format.index import FileInfo

__all__ = ["StreamHooks"]


class StreamHooks(CachedStream, Protocol):
    """What :mod:`.stream_files` and :mod:`.remote_copy` use of a stream."""

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str: ...

    def _decompress_shard_part(
        self,
        zip_info: FileInfo,
        zip_filename: str,
        raw_filename: str,
        compression: str | None,
    ) -> None: ...
