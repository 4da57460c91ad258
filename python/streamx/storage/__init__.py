"""Remote storage for streamx: fsspec dispatch, atomic downloads, background uploads.

Nothing here imports the compiled extension, so these modules load before it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamx.lazy_names import lazy_names

if TYPE_CHECKING:
    from streamx.storage.download import download_file
    from streamx.storage.filesystems import get_filesystem
    from streamx.storage.merge_index import merge_index
    from streamx.storage.upload import Uploader, UploadFailedError

__all__ = [
    "UploadFailedError",
    "Uploader",
    "download_file",
    "get_filesystem",
    "merge_index",
]

# Name -> module defining it, imported when first read: every ``streamx.storage.<module>``
# import runs this file, and a reader needs neither uploads nor index merging.
_LAZY = {
    "UploadFailedError": "streamx.storage.upload",
    "Uploader": "streamx.storage.upload",
    "download_file": "streamx.storage.download",
    "get_filesystem": "streamx.storage.filesystems",
    "merge_index": "streamx.storage.merge_index",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
