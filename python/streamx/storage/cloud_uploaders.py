"""The uploaders of mosaicml-streaming's ``streaming.base.storage.upload`` (which
re-exports them), over streamx's uploads.

``CloudUploader.get(out, ...)`` picks a class by the remote's scheme, as mosaic does, and
each class uploads one file per :meth:`CloudUploader.upload_file` call, synchronously (the
caller brings its own threads). Every transfer is :func:`streamx.storage.upload.upload_file`:
S3 by signed PUTs where the configuration allows it, everything else through fsspec
(``dbfs:`` through the Databricks SDK, :mod:`~streamx.storage.databricks_fs`). Only
argument checks, attributes and the wording of errors are mosaic's. Where mosaic raises a
cloud SDK's own exception for a missing bucket, this raises ``FileNotFoundError`` with
mosaic's message, since streamx needs none of those SDKs.
"""

from __future__ import annotations

import logging
import os
import posixpath
import weakref
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tqdm import tqdm

from streamx.location import INDEX_BASENAME
from streamx.storage import s3_put
from streamx.storage.filesystems import get_filesystem
from streamx.storage.s3fs_check import require_s3fs
from streamx.storage.upload import parse_out
from streamx.storage.upload import upload_file as _upload

if TYPE_CHECKING:  # the SDK is imported when a dbfs: remote is used, not with streamx
    from databricks.sdk import WorkspaceClient

__all__ = [
    "AlipanUploader",
    "AzureDataLakeUploader",
    "AzureUploader",
    "CloudUploader",
    "DBFSUploader",
    "DatabricksUnityCatalogUploader",
    "DatabricksUploader",
    "GCSUploader",
    "HFUploader",
    "LocalUploader",
    "OCIUploader",
    "S3Uploader",
]

logger = logging.getLogger(__name__)

Out = str | tuple[str, str]

UPLOADERS = {
    "s3": "S3Uploader",
    "gs": "GCSUploader",
    "oci": "OCIUploader",
    "hf": "HFUploader",
    "azure": "AzureUploader",
    "azure-dl": "AzureDataLakeUploader",
    "dbfs:/Volumes": "DatabricksUnityCatalogUploader",
    "dbfs": "DBFSUploader",
    "alipan": "AlipanUploader",
    "": "LocalUploader",
}


def _remote_of(out: Out) -> str:
    return out if isinstance(out, str) else out[1]


class CloudUploader:
    """Uploads the files a writer produces under a local directory to a remote one.

    Args:
        out: A local directory (nothing is uploaded), a remote URL (files are staged in a new
            temporary directory) or a ``(local, remote)`` pair.
        keep_local: Keep each local file after its upload.
        progress_bar: Show a tqdm bar of the bytes of each upload.
        retry: Attempts per file, at least 1.
        exist_ok: Allow a local directory that already holds files (a warning is logged);
            otherwise that is an error.

    Raises:
        ValueError: for a malformed `out` or a scheme no uploader serves.
        FileExistsError: if the local directory is not empty and `exist_ok` is false.

    Examples:
        >>> import os, tempfile
        >>> local, remote = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> up = CloudUploader.get((local, remote))
        >>> _ = open(os.path.join(local, "index.json"), "w").write("{}")
        >>> up.upload_file("index.json")
        >>> os.listdir(remote), os.listdir(local)
        (['index.json'], [])
    """

    @classmethod
    def get(
        cls,
        out: Out,
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> CloudUploader:
        """The uploader for `out`'s remote scheme; the arguments are the constructor's.

        Raises:
            ValueError: for a malformed `out` or a scheme no uploader serves.
        """
        cls._validate(cls, out)  # type: ignore[arg-type]  # mosaic calls it unbound too
        remote = _remote_of(out)
        prefix = urlparse(remote).scheme
        if prefix == "dbfs" and remote.startswith("dbfs:/Volumes"):
            prefix = "dbfs:/Volumes"
        uploader: type[CloudUploader] = globals()[UPLOADERS[prefix]]
        return uploader(out, keep_local, progress_bar, retry, exist_ok)

    def _validate(self, out: Out) -> None:
        if not isinstance(out, str) and len(out) != 2:
            raise ValueError(
                "Invalid `out` argument. It is either a string of local/remote directory or a "
                "list of two strings with [local, remote]."
            )
        scheme = urlparse(_remote_of(out)).scheme
        if scheme not in UPLOADERS:
            raise ValueError(f"Invalid Cloud provider prefix: {scheme}.")

    def __init__(
        self,
        out: Out,
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> None:
        self._validate(out)
        self.keep_local = keep_local
        self.progress_bar = progress_bar
        self.retry = retry
        self.local, self.remote, temporary = parse_out(out)
        if temporary:
            # Files leave as they are uploaded; the directory the user never named goes
            # with the uploader, unless `keep_local` left files in it.
            weakref.finalize(self, _remove_if_empty, self.local)
        if os.path.isdir(self.local) and os.listdir(self.local):
            if not exist_ok:
                raise FileExistsError(f"Directory is not empty: {self.local}")
            logger.warning("Directory %s exists and is not empty; exist_ok is set", self.local)
        os.makedirs(self.local, exist_ok=True)
        self._check_remote()

    def _check_remote(self) -> None:
        """What a subclass checks or prepares of its remote once constructed."""

    def upload_file(self, filename: str) -> None:
        """Upload ``<local>/<filename>`` to ``<remote>/<filename>``, then remove the local
        file unless `keep_local`. Does nothing without a remote.

        Args:
            filename: The file's path relative to the local directory.

        Raises:
            FileNotFoundError: if the file or the remote bucket is missing.
            OSError: if the last attempt failed.
        """
        if not self.remote:
            return
        local = os.path.join(self.local, filename)
        remote = posixpath.join(self.remote, filename)
        size = os.path.getsize(local)
        desc = f"Uploading to {remote}"
        with tqdm(
            total=size, unit="B", unit_scale=True, desc=desc, disable=not self.progress_bar
        ) as bar:
            _upload(local, remote, retry=self.retry)
            bar.update(size)
        self.clear_local(local)

    def list_objects(self, prefix: str | None = None) -> list[str] | None:
        """The keys under the remote directory that start with `prefix`, bucket excluded.

        Args:
            prefix: Relative to the remote directory; ``None`` lists everything.
        """
        if not self.remote:
            return []
        fs, root = get_filesystem(self.remote)
        target = posixpath.join(root, prefix or "")
        fs.invalidate_cache()  # uploads may have bypassed this filesystem
        found = fs.find(target if target.endswith("/") else posixpath.dirname(target))
        bucket = urlparse(self.remote).netloc
        return [_strip(bucket, path) for path in found if path.startswith(target)]

    def clear_local(self, local: str) -> None:
        """Remove the file `local` unless `keep_local` is set.

        Args:
            local: A local file path.
        """
        if not self.keep_local and os.path.isfile(local):
            os.remove(local)

    def _require_container(self, what: str) -> None:
        """Raise ``FileNotFoundError`` unless the remote's bucket (container...) exists."""
        assert self.remote is not None
        fs, path = get_filesystem(self.remote)
        bucket = path.split("/", 1)[0]
        if not fs.exists(bucket):
            raise FileNotFoundError(
                f"Either {what} `{bucket}` does not exist! or check the bucket permission."
            )


def _strip(bucket: str, path: str) -> str:
    return path[len(bucket) + 1 :] if bucket and path.startswith(f"{bucket}/") else path


class S3Uploader(CloudUploader):
    """Uploads to AWS S3 or an S3-compatible store (``S3_ENDPOINT_URL``); the constructor
    checks that the bucket exists. See :class:`CloudUploader` for the arguments.

    Raises:
        FileNotFoundError: if the bucket does not exist or these credentials cannot see it.
        ImportError: if the configuration needs s3fs and it is missing or too old.
    """

    def _check_remote(self) -> None:
        assert self.remote is not None
        if s3_put.put_route(posixpath.join(self.remote, INDEX_BASENAME), 0) is None:
            require_s3fs()
        self.check_bucket_exists(self.remote)

    def list_objects(self, prefix: str | None = None) -> list[str] | None:
        """The keys under the remote directory that start with `prefix` (listed by s3fs).

        Args:
            prefix: Relative to the remote directory; ``None`` lists everything.

        Raises:
            ImportError: if s3fs is missing or too old.
        """
        require_s3fs()
        return super().list_objects(prefix)

    def check_bucket_exists(self, remote: str) -> None:
        """Raise unless the bucket of `remote` exists.

        Args:
            remote: An ``s3://`` URL.

        Raises:
            FileNotFoundError: if it does not, or the credentials may not see it.
        """
        bucket = urlparse(remote).netloc
        exists = s3_put.bucket_exists(bucket)
        if exists is None:
            exists = get_filesystem(remote)[0].exists(bucket)
        if not exists:
            raise FileNotFoundError(
                f"Either bucket `{bucket}` does not exist! or check the bucket permission."
            )


class _ContainerUploader(CloudUploader):
    """An fsspec-served cloud: the constructor checks the bucket (container) exists."""

    _container = "bucket"

    def _check_remote(self) -> None:
        self._require_container(self._container)


class GCSUploader(_ContainerUploader):
    """Uploads to Google Cloud Storage (HMAC keys in ``GCS_KEY``/``GCS_SECRET``, or
    application default credentials). See :class:`CloudUploader` for the arguments."""

    def check_bucket_exists(self, remote: str) -> None:
        """Raise ``FileNotFoundError`` unless the bucket of `remote` exists."""
        self._require_container("bucket")


class OCIUploader(_ContainerUploader):
    """Uploads to Oracle Cloud Object Storage. See :class:`CloudUploader` for the arguments."""

    def check_bucket_exists(self, remote: str) -> None:
        """Raise ``FileNotFoundError`` unless the bucket of `remote` exists."""
        self._require_container("bucket")


class AzureUploader(_ContainerUploader):
    """Uploads to Azure Blob Storage. See :class:`CloudUploader` for the arguments."""

    def check_bucket_exists(self, remote: str) -> None:
        """Raise ``FileNotFoundError`` unless the container of `remote` exists."""
        self._require_container("bucket")


class AzureDataLakeUploader(_ContainerUploader):
    """Uploads to Azure Data Lake Storage. See :class:`CloudUploader` for the arguments."""

    _container = "container"

    def check_container_exists(self, remote: str) -> None:
        """Raise ``FileNotFoundError`` unless the file system of `remote` exists."""
        self._require_container("container")


class HFUploader(_ContainerUploader):
    """Uploads to a Hugging Face dataset repository. See :class:`CloudUploader`."""

    _container = "dataset"

    def check_dataset_exists(self) -> None:
        """Raise ``FileNotFoundError`` unless the dataset repository exists."""
        self._require_container("dataset")


class _UnsupportedUploader(CloudUploader):
    """A scheme streamx has no client for: the constructor says so."""

    def _check_remote(self) -> None:
        assert self.remote is not None
        get_filesystem(self.remote)  # raises ValueError naming the remote
        raise ValueError(f"Unsupported remote path: {self.remote}")


class DatabricksUploader(CloudUploader):
    """Uploads to a Databricks workspace through the Databricks SDK, which finds the
    workspace and credentials (``DATABRICKS_HOST``/``DATABRICKS_TOKEN``, a profile...).
    See :class:`CloudUploader` for the arguments.

    Raises:
        ValueError: if the SDK finds no workspace or credentials.
        ImportError: if databricks-sdk is not installed.
    """

    def _check_remote(self) -> None:
        assert self.remote is not None
        get_filesystem(self.remote)  # the SDK's client: missing credentials fail here

    @property
    def client(self) -> WorkspaceClient:
        """The Databricks SDK's ``WorkspaceClient`` the uploads go through."""
        assert self.remote is not None
        fs = get_filesystem(self.remote)[0]
        client: WorkspaceClient = fs.client
        return client


class DatabricksUnityCatalogUploader(DatabricksUploader):
    """Uploads to a Unity Catalog volume (``dbfs:/Volumes/...``) with the SDK's Files API,
    each file replacing what is there and its size checked once stored. See
    :class:`DatabricksUploader`."""


class DBFSUploader(DatabricksUploader):
    """Uploads to the Databricks File System (``dbfs:/...``) with the SDK's DBFS API; the
    constructor checks that the remote directory exists. See :class:`DatabricksUploader`.

    Raises:
        FileNotFoundError: if the remote directory does not exist.
    """

    def _check_remote(self) -> None:
        super()._check_remote()
        self.check_folder_exists()

    def check_folder_exists(self) -> None:
        """Raise ``FileNotFoundError`` unless the remote directory exists.

        Raises:
            PermissionError: if the workspace refuses the credentials.
        """
        assert self.remote is not None
        fs, path = get_filesystem(self.remote)
        try:
            fs.info(path)  # not fs.exists, which would take refused credentials for "no"
        except FileNotFoundError as err:
            raise FileNotFoundError(f"Databricks File System path {path} not found") from err


class AlipanUploader(_UnsupportedUploader):
    """``alipan://``: streamx has no Alipan client; the constructor raises ``ValueError``."""


class LocalUploader(CloudUploader):
    """Copies files from one local directory to another. See :class:`CloudUploader`."""

    def _check_remote(self) -> None:
        if self.remote:
            os.makedirs(self.remote, exist_ok=True)

    def list_objects(self, prefix: str | None = None) -> list[str]:
        """The paths of the files under the *local* directory that start with
        ``<local>/<prefix>``, sorted (what mosaic's ``LocalUploader`` returns).

        Args:
            prefix: Relative to the local directory; ``None`` lists everything.
        """
        start = os.path.join(self.local, prefix or "")
        found = [
            os.path.join(directory, name)
            for directory, _, names in os.walk(self.local)
            for name in names
        ]
        return sorted(path for path in found if path.startswith(start))


def _remove_if_empty(directory: str) -> None:
    try:
        os.rmdir(directory)
    except OSError:
        pass  # files kept (keep_local) or already gone
