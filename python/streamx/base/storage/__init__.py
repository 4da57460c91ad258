"""mosaicml-streaming's ``streaming.base.storage``: the downloaders and uploaders it exports.

The classes are thin layers over :mod:`streamx.storage`; see their modules for the few ways
they differ from mosaic's.
"""

from streamx.base.storage.download import (
    AlipanDownloader,
    AzureDataLakeDownloader,
    AzureDownloader,
    CloudDownloader,
    DatabricksUnityCatalogDownloader,
    DBFSDownloader,
    GCSDownloader,
    HFDownloader,
    LocalDownloader,
    OCIDownloader,
    S3Downloader,
    SFTPDownloader,
)
from streamx.base.storage.upload import (
    AzureDataLakeUploader,
    AzureUploader,
    CloudUploader,
    GCSUploader,
    HFUploader,
    LocalUploader,
    OCIUploader,
    S3Uploader,
)

__all__ = [
    "AlipanDownloader",
    "AzureDataLakeDownloader",
    "AzureDataLakeUploader",
    "AzureDownloader",
    "AzureUploader",
    "CloudDownloader",
    "CloudUploader",
    "DBFSDownloader",
    "DatabricksUnityCatalogDownloader",
    "GCSDownloader",
    "GCSUploader",
    "HFDownloader",
    "HFUploader",
    "LocalDownloader",
    "LocalUploader",
    "OCIDownloader",
    "OCIUploader",
    "S3Downloader",
    "S3Uploader",
    "SFTPDownloader",
]
