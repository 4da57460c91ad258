"""mosaicml-streaming's ``streaming.base.storage.upload``: the classes of
:mod:`streamx.storage.cloud_uploaders`."""

from streamx.storage.cloud_uploaders import (
    UPLOADERS as UPLOADERS,
)
from streamx.storage.cloud_uploaders import (
    AlipanUploader,
    AzureDataLakeUploader,
    AzureUploader,
    CloudUploader,
    DatabricksUnityCatalogUploader,
    DBFSUploader,
    GCSUploader,
    HFUploader,
    LocalUploader,
    OCIUploader,
    S3Uploader,
)
from streamx.storage.cloud_uploaders import (
    DatabricksUploader as DatabricksUploader,
)

__all__ = [
    "AlipanUploader",
    "AzureDataLakeUploader",
    "AzureUploader",
    "CloudUploader",
    "DBFSUploader",
    "DatabricksUnityCatalogUploader",
    "GCSUploader",
    "HFUploader",
    "LocalUploader",
    "OCIUploader",
    "S3Uploader",
]
