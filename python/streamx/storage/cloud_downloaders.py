"""The downloaders of mosaicml-streaming's ``streaming.base.storage.download`` (which
re-exports them), over streamx's downloads.

0.13.0 has one ``CloudDownloader`` class per scheme; releases before it had one function
per scheme and ``download_file``, which code such as LLM Foundry still imports. Both are
here. Every transfer is :func:`streamx.storage.download.download_file` (atomic, with a
timeout); only the argument checks and the wording of failures are mosaic's, since user code
matches on them. A missing S3 object is a ``FileNotFoundError`` with mosaic's message where
mosaic raises botocore's ``ClientError``: streamx does not need botocore to download.
"""

from __future__ import annotations

import abc
import logging
import os
import time
from typing import ClassVar, Protocol
from urllib.parse import urlparse

from streamx.storage.download import download_file as _fetch

__all__ = [
    "AlipanDownloader",
    "AzureDataLakeDownloader",
    "AzureDownloader",
    "CloudDownloader",
    "DBFSDownloader",
    "DatabricksUnityCatalogDownloader",
    "GCSDownloader",
    "HFDownloader",
    "LocalDownloader",
    "OCIDownloader",
    "S3Downloader",
    "SFTPDownloader",
    "download_file",
    "download_from_alipan",
    "download_from_azure",
    "download_from_azure_datalake",
    "download_from_databricks_unity_catalog",
    "download_from_dbfs",
    "download_from_gcs",
    "download_from_hf",
    "download_from_local",
    "download_from_oci",
    "download_from_s3",
    "download_from_sftp",
    "wait_for_download",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
BOTOCORE_CLIENT_ERROR_CODES = {"403", "404", "NoSuchKey"}
GCS_ERROR_NO_AUTHENTICATION = (
    "Either set the environment variables `GCS_KEY` and `GCS_SECRET` or use any of the "
    "methods in https://cloud.google.com/docs/authentication/external/set-up-adc to set up "
    "Application Default Credentials."
)


def _not_found_message(scheme: str, remote: str) -> str:
    if scheme == "s3":
        return (
            f"Object {remote} not found! Either check the bucket path or the bucket permission. "
            "If the bucket is a requester pays bucket, then provide the bucket name to the "
            "environment variable `MOSAICML_STREAMING_AWS_REQUESTER_PAYS`."
        )
    return f"Object {remote} not found."


def _transfer(scheme: str, remote: str, local: str, timeout: float) -> None:
    """One attempt, as mosaic's downloaders make; failures keep streamx's types."""
    try:
        _fetch(remote, local, retry=1, timeout=timeout)
    except FileNotFoundError as err:
        raise FileNotFoundError(_not_found_message(scheme, remote)) from err


def _check_scheme(remote: str, scheme: str) -> None:
    got = urlparse(remote).scheme
    if got != scheme:
        raise ValueError(
            f"Expected obj.scheme to be `{scheme}`, instead, got {got} for remote={remote}"
        )


class CloudDownloader(abc.ABC):
    """Downloads files from one kind of storage (mosaic 0.13.0's interface).

    Examples:
        >>> import os, tempfile
        >>> src = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(src, "w").write("hi")
        >>> dst = os.path.join(tempfile.mkdtemp(), "b.txt")
        >>> CloudDownloader.direct_download(src, dst)
        >>> open(dst).read()
        'hi'
    """

    @classmethod
    def get(cls, remote_dir: str | None = None) -> CloudDownloader:
        """The downloader for `remote_dir`'s scheme (a local one for ``None``).

        Args:
            remote_dir: A remote URL or local path, or ``None``.

        Raises:
            ValueError: if no downloader serves the scheme.
        """
        if remote_dir is None:
            return LocalDownloader()
        prefix = urlparse(remote_dir).scheme
        if prefix == "dbfs" and remote_dir.startswith("dbfs:/Volumes"):
            prefix = "dbfs-uc"
        by_prefix = {sub._client_identifier(): sub for sub in CloudDownloader.__subclasses__()}
        if prefix not in by_prefix:
            raise ValueError(f"Unsupported remote path: {remote_dir}")
        return by_prefix[prefix]()

    @classmethod
    def direct_download(
        cls, remote: str | None, local: str, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Download `remote` to `local` with a downloader made for the occasion.

        Args:
            remote: The source URL or path.
            local: The destination path; an existing file is kept as it is.
            timeout: Seconds the download may take.

        Raises:
            ValueError: for an unsupported scheme, or no `remote` and no `local` file.
            FileNotFoundError: if the remote object does not exist.
        """
        downloader = cls.get(remote)
        downloader.download(remote, local, timeout)
        downloader.clean_up()

    def download(self, remote: str | None, local: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Download `remote` to `local` unless `local` exists already.

        Args:
            remote: The source URL or path.
            local: The destination path.
            timeout: Seconds the download may take.

        Raises:
            ValueError: if `remote` is empty while `local` is missing, or has another scheme
                than this downloader's.
            FileNotFoundError: if the remote object does not exist.
        """
        if os.path.exists(local):
            return
        if not remote:
            raise ValueError(
                "In the absence of local dataset, path to remote dataset must be provided"
            )
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        self._validate_remote_path(remote)
        self._download_file_impl(remote, local, timeout)

    # The URL scheme, named in each subclass's class statement: ``scheme="s3"``.
    _scheme: ClassVar[str]

    def __init_subclass__(cls, scheme: str | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if scheme is not None:
            cls._scheme = scheme

    @classmethod
    def _client_identifier(cls) -> str:
        """The URL scheme this downloader serves; mosaic-style subclasses override it."""
        return cls._scheme

    def clean_up(self) -> None:
        """Release what the downloader holds: nothing, streamx's connections are shared."""
        return

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        _transfer(self._client_identifier(), remote, local, timeout)

    def _validate_remote_path(self, remote: str) -> None:
        scheme = urlparse(remote).scheme
        if scheme != self._client_identifier():
            raise ValueError(
                f"Expected remote path to start with url scheme of `{scheme}`, got {remote}."
            )


class S3Downloader(CloudDownloader, scheme="s3"):
    """Downloads files from AWS S3 or an S3-compatible store."""


class SFTPDownloader(CloudDownloader, scheme="sftp"):
    """Downloads files from an SFTP server."""


class GCSDownloader(CloudDownloader, scheme="gs"):
    """Downloads files from Google Cloud Storage."""


class OCIDownloader(CloudDownloader, scheme="oci"):
    """Downloads files from Oracle Cloud Object Storage."""


class HFDownloader(CloudDownloader, scheme="hf"):
    """Downloads files from the Hugging Face Hub."""


class AzureDownloader(CloudDownloader, scheme="azure"):
    """Downloads files from Azure Blob Storage."""


class AzureDataLakeDownloader(CloudDownloader, scheme="azure-dl"):
    """Downloads files from Azure Data Lake Storage."""


class DatabricksUnityCatalogDownloader(CloudDownloader, scheme="dbfs-uc"):
    """Downloads files from Databricks Unity Catalog volumes (``dbfs:/Volumes/...``) with
    the Databricks SDK's Files API; the SDK finds the workspace and credentials
    (``DATABRICKS_HOST``/``DATABRICKS_TOKEN``, a profile...)."""

    def _validate_remote_path(self, remote: str) -> None:
        parts = remote.split("/")
        prefix = "/".join(parts[:2])
        if prefix != "dbfs:/Volumes":
            raise ValueError(
                "Expected path prefix to be `dbfs:/Volumes` if it is a Databricks Unity "
                f"Catalog, instead, got {prefix} for remote={remote}."
            )


class DBFSDownloader(CloudDownloader, scheme="dbfs"):
    """Downloads files from the Databricks File System (``dbfs:/...``) with the Databricks
    SDK's DBFS API (its Files API for ``dbfs:/Volumes/...``)."""


class AlipanDownloader(CloudDownloader, scheme="alipan"):
    """Downloads files from Alipan."""


class LocalDownloader(CloudDownloader, scheme=""):
    """Downloads files from the local filesystem."""

    def _validate_remote_path(self, remote: str) -> None:
        pass  # any path is a local path


def download_from_s3(remote: str, local: str, timeout: float) -> None:
    """Download `remote` (``s3://``) to `local` (mosaic before 0.13.0).

    Raises:
        ValueError: if `remote` is not an ``s3://`` URL.
        FileNotFoundError: if the object does not exist.
    """
    _check_scheme(remote, "s3")
    _transfer("s3", remote, local, timeout)


class _LegacyDownload(Protocol):
    """The signature of mosaic's per-scheme ``download_from_*`` functions."""

    def __call__(self, remote: str, local: str) -> None: ...


_LEGACY_DOC = """Download `remote` (``{scheme}://``) to `local` (mosaic before 0.13.0).

    Raises:
        ValueError: if `remote` is not a ``{scheme}://`` URL, or streamx cannot read it.
        FileNotFoundError: if the object does not exist.
    """


def _legacy_download(name: str, scheme: str) -> _LegacyDownload:
    """mosaic's ``download_from_<name>``: a scheme check, then one transfer."""

    def download(remote: str, local: str) -> None:
        _check_scheme(remote, scheme)
        _transfer(scheme, remote, local, DEFAULT_TIMEOUT)

    download.__name__ = download.__qualname__ = f"download_from_{name}"
    download.__doc__ = _LEGACY_DOC.format(scheme=scheme)
    return download


# The functions that differ only by scheme: function name suffix -> URL scheme.
download_from_sftp = _legacy_download("sftp", "sftp")
download_from_gcs = _legacy_download("gcs", "gs")
download_from_oci = _legacy_download("oci", "oci")
download_from_hf = _legacy_download("hf", "hf")
download_from_azure = _legacy_download("azure", "azure")
download_from_azure_datalake = _legacy_download("azure_datalake", "azure-dl")
download_from_dbfs = _legacy_download("dbfs", "dbfs")
download_from_alipan = _legacy_download("alipan", "alipan")


def download_from_databricks_unity_catalog(remote: str, local: str) -> None:
    """Download `remote` (``dbfs:/Volumes/...``) to `local` with the Databricks SDK's Files
    API (mosaic before 0.13.0).

    Raises:
        ValueError: if `remote` is not a ``dbfs:`` URL under ``dbfs:/Volumes``.
        FileNotFoundError: if the file does not exist.
        PermissionError: if the workspace refuses the credentials; names it and `remote`.
    """
    _check_scheme(remote, "dbfs")
    DatabricksUnityCatalogDownloader()._validate_remote_path(remote)
    _transfer("dbfs", remote, local, DEFAULT_TIMEOUT)


def download_from_local(remote: str, local: str) -> None:
    """Copy the local file `remote` to `local`, atomically.

    Raises:
        FileNotFoundError: if `remote` does not exist.
    """
    _fetch(remote, local, retry=1)


def download_file(remote: str | None, local: str, timeout: float) -> None:
    """Download `remote` to `local` unless `local` exists (mosaic before 0.13.0).

    Args:
        remote: Any URL streamx reads, or a local path.
        local: The destination path; its directory is created.
        timeout: Seconds the download may take.

    Raises:
        ValueError: if `remote` is empty while `local` is missing, or its scheme is unsupported.
        FileNotFoundError: if the remote object does not exist.

    Examples:
        >>> import os, tempfile
        >>> src = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(src, "w").write("hi")
        >>> dst = os.path.join(tempfile.mkdtemp(), "sub", "a.txt")
        >>> download_file(src, dst, 60)
        >>> open(dst).read()
        'hi'
    """
    CloudDownloader.direct_download(remote, local, timeout)


def wait_for_download(local: str, timeout: float = 60) -> None:
    """Wait until another thread or process has downloaded `local`.

    Args:
        local: The file to wait for.
        timeout: Seconds to wait.

    Raises:
        TimeoutError: if `local` does not appear within `timeout` seconds.
    """
    start = time.monotonic()
    while not os.path.exists(local):
        if time.monotonic() - start > timeout:
            raise TimeoutError(
                f"Waited longer than {timeout}s for other worker to download {local}."
            )
        time.sleep(0.25)
