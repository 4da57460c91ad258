"""Remote storage for streamx: fsspec dispatch, atomic downloads, background uploads.

Nothing here imports the compiled extension, so these modules load before it is built.
"""

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
