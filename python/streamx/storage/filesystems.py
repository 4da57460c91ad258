"""Turn a remote URL into an fsspec filesystem plus the path to hand it.

One filesystem object is built per process and remote configuration and then reused for
every shard: rebuilding clients per file is what made mosaicml-streaming re-fetch
credentials for each shard. The cache is keyed by pid because an object built before a
fork holds sockets and an event loop that belong to the parent.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from streamx.location import Location
from streamx.storage.aws_credentials import credentials_found, env_fingerprint, forget_credentials
from streamx.storage.certificate_errors import certificate_error
from streamx.storage.hub_errors import hub_access_error

if TYPE_CHECKING:  # fsspec is imported when a filesystem is built, not with streamx
    from fsspec import AbstractFileSystem

    from streamx.storage.object_pin import ObjectPin

__all__ = ["clear_cache", "fsspec_errors", "get_filesystem", "split_url", "translated"]

_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], AbstractFileSystem] = {}
_CACHE_PID = os.getpid()
# Filesystems a parent process built before forking: unusable here (their sockets and event
# loop stayed behind) but their configuration objects are not, see ``_s3_plan``.
_INHERITED: dict[tuple[Any, ...], AbstractFileSystem] = {}

# scheme -> (module to import, extra that provides it)
_PACKAGES = {
    "s3": ("s3fs", "s3"),
    "gs": ("gcsfs", "gcs"),
    "azure": ("adlfs", "azure"),
    "oci": ("ocifs", "oci"),
    "hf": ("huggingface_hub", "hf"),
    "http": ("aiohttp", "http"),
    "dbfs": ("databricks.sdk", "databricks"),
}


def _require(kind: str, scheme: str) -> None:
    """Import-check the optional package behind `kind`, naming the extra when missing."""
    module, extra = _PACKAGES[kind]
    try:
        __import__(module)
    except ImportError as err:
        hint = f"pip install 'streamx-data[{extra}]'"
        raise ImportError(f"{scheme}:// needs {module}: {hint}") from err


def split_url(url: str) -> tuple[str, str, str]:
    """Split a remote URL into `(scheme, netloc, path)`; local paths get scheme `''`
    (:class:`streamx.location.Location` parses it; a ``file:`` URL's path is the local one)."""
    where = Location.parse(url)
    return where.scheme, where.netloc, where.path


def clear_cache() -> None:
    """Forget every cached filesystem (tests use this after changing environment variables)."""
    with _LOCK:
        _CACHE.clear()
        _INHERITED.clear()
    forget_credentials()


def get_filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """Return the filesystem serving `url` and the path to use with it.

    Args:
        url: ``s3://``, ``gs://``/``gcs://``, ``azure://``, ``azure-dl://``, ``oci://``,
            ``hf://datasets/...``, ``http(s)://``, ``dbfs:/Volumes/...`` (a Unity Catalog
            volume), ``dbfs:/...`` (the legacy DBFS root), ``file://`` or a local path.

    Returns:
        ``(filesystem, path)``; the same filesystem object for every call in one process
        with the same scheme, bucket-level settings and environment.

    Raises:
        ValueError: for an unsupported scheme.
        ImportError: when the optional package for the scheme is missing; the message
            names the ``streamx-data[...]`` extra to install.
    """
    scheme, netloc, path = split_url(url)
    key, build, fs_path = _plan(url, scheme, netloc, path)
    global _CACHE_PID
    with _LOCK:
        if os.getpid() != _CACHE_PID:
            _INHERITED.update(_CACHE)
            _CACHE.clear()
            _CACHE_PID = os.getpid()
        fs = _CACHE.get(key)
        if fs is None:
            fs = _CACHE[key] = build()
    return fs, fs_path


def _plan(url: str, scheme: str, netloc: str, path: str) -> tuple[tuple[Any, ...], Any, str]:
    """Pick the cache key, the factory and the filesystem path for one URL."""
    if scheme in ("", "file"):
        local = path if scheme == "file" else url
        return ("file",), _local, os.path.abspath(os.path.expanduser(local))
    if scheme == "s3":
        _require("s3", scheme)
        return _s3_plan(netloc, path)
    if scheme in ("gs", "gcs"):
        return _gcs_plan(scheme, netloc, path)
    if scheme in ("azure", "azure-dl"):
        _require("azure", scheme)
        return _azure_plan(scheme, netloc, path)
    if scheme == "oci":
        _require("oci", scheme)
        return ("oci",), _oci, f"{netloc}{path}"
    if scheme == "hf":
        _require("hf", scheme)
        return ("hf", os.environ.get("HF_TOKEN")), _hf, f"{netloc}{path}"
    if scheme in ("http", "https"):
        _require("http", scheme)
        from streamx.storage.http_pool import trust_key

        # Keyed by the CA bundles named now: a bundle named later gets a filesystem of its own.
        return ("http", trust_key()), _http, url
    if scheme == "dbfs":
        _require("dbfs", scheme)
        # The SDK reads its configuration from these (and from the profile they name).
        databricks = tuple(sorted((k, v) for k, v in os.environ.items() if "DATABRICKS" in k))
        return ("dbfs", databricks), lambda: _dbfs(url), path
    raise ValueError(f"Unsupported remote path: {url}")


def _local() -> AbstractFileSystem:
    from fsspec.implementations.local import LocalFileSystem

    return LocalFileSystem(skip_instance_cache=True)


def _http() -> AbstractFileSystem:
    from fsspec.implementations.http import HTTPFileSystem

    from streamx.storage.http_pool import tls_context

    # aiohttp builds its default TLS context once, at import, from SSL_CERT_FILE as it was
    # then; each request is given the trust the environment names now instead, the one the
    # direct GETs use (the system store plus AWS_CA_BUNDLE, SSL_CERT_FILE, REQUESTS_CA_BUNDLE).
    return HTTPFileSystem(skip_instance_cache=True, ssl=tls_context())


def _s3_plan(bucket: str, path: str) -> tuple[tuple[Any, ...], Any, str]:
    endpoint = os.environ.get("S3_ENDPOINT_URL") or None
    payers = os.environ.get("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "")
    requester_pays = bucket in {b.strip() for b in payers.split(",") if b.strip()}
    acl = os.environ.get("S3_CANNED_ACL") or None
    # Unsigned requests only when the chain surely has no credentials: after a failed
    # lookup, sign anyway and let s3fs report the problem in botocore's words.
    anon = credentials_found() is False
    key = ("s3", endpoint, requester_pays, acl, anon, env_fingerprint())

    def build() -> AbstractFileSystem:
        import s3fs

        kwargs: dict[str, Any] = {"skip_instance_cache": True, "anon": anon}
        parent = _INHERITED.get(key)
        if getattr(parent, "session", None) is not None:
            # A DataLoader worker: the parent's aiobotocore session has the S3 service model
            # parsed already, which saves each worker about 0.1 s of CPU before its first read.
            kwargs["session"] = parent.session  # type: ignore[union-attr]
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        if requester_pays:
            kwargs["requester_pays"] = True
        if acl:
            kwargs["s3_additional_kwargs"] = {"ACL": acl}
        return s3fs.S3FileSystem(**kwargs)

    return key, build, f"{bucket}{path}"


def _gcs_plan(scheme: str, bucket: str, path: str) -> tuple[tuple[Any, ...], Any, str]:
    key_id, secret = os.environ.get("GCS_KEY"), os.environ.get("GCS_SECRET")
    if key_id and secret:
        # HMAC keys only work through the S3-compatible XML API.
        _require("s3", scheme)
        endpoint = "https://storage.googleapis.com"

        def build_hmac() -> AbstractFileSystem:
            import s3fs

            return s3fs.S3FileSystem(
                key=key_id, secret=secret, endpoint_url=endpoint, skip_instance_cache=True
            )

        return ("gs-hmac", key_id, endpoint), build_hmac, f"{bucket}{path}"
    _require("gs", scheme)
    emulator = os.environ.get("STORAGE_EMULATOR_HOST") or None

    def build() -> AbstractFileSystem:
        import gcsfs

        if emulator:
            # The default class asks a gRPC control plane for the bucket layout on every
            # read; emulators only speak JSON/HTTP, so use the plain implementation.
            from gcsfs.core import GCSFileSystem

            return GCSFileSystem(endpoint_url=emulator, token="anon", skip_instance_cache=True)
        return gcsfs.GCSFileSystem(skip_instance_cache=True)

    return ("gs", emulator), build, f"{bucket}{path}"


def _azure_plan(scheme: str, netloc: str, path: str) -> tuple[tuple[Any, ...], Any, str]:
    account = os.environ.get("AZURE_ACCOUNT_NAME") or netloc.split(".", 1)[0]
    access_key = os.environ.get("AZURE_ACCOUNT_ACCESS_KEY") or None
    # azure://<account>.blob.core.windows.net/<container>/<blob>, whereas in
    # azure-dl://<filesystem>/<path> the netloc names the file system (container).
    fs_path = path.lstrip("/") if scheme == "azure" else f"{netloc.split('@', 1)[0]}{path}"

    def build() -> AbstractFileSystem:
        import adlfs

        kwargs: dict[str, Any] = {"account_name": account, "skip_instance_cache": True}
        if access_key:
            kwargs["account_key"] = access_key
        else:
            kwargs["anon"] = False  # fall back to DefaultAzureCredential (CLI, env, identity)
        return adlfs.AzureBlobFileSystem(**kwargs)

    return ("azure", account, access_key is not None), build, fs_path


def _dbfs(url: str) -> AbstractFileSystem:
    from streamx.storage.databricks_fs import DatabricksFileSystem

    try:
        return DatabricksFileSystem(skip_instance_cache=True)
    except ValueError as err:  # the SDK's: no workspace or credentials found
        raise ValueError(f"{url}: the Databricks SDK found no workspace to use: {err}") from err


def _oci() -> AbstractFileSystem:
    import ocifs

    fs: AbstractFileSystem = ocifs.OCIFileSystem(skip_instance_cache=True)
    return fs


def _hf() -> AbstractFileSystem:
    from huggingface_hub import HfFileSystem

    fs: AbstractFileSystem = HfFileSystem(skip_instance_cache=True)
    return fs


@contextlib.contextmanager
def fsspec_errors(url: str, pin: ObjectPin | None = None) -> Iterator[None]:
    """Raises what a file system from :func:`get_filesystem` raised for ``url`` in streamx's
    words, where :func:`translated` knows them (the original is the ``__cause__``)."""
    try:
        yield
    except OSError as err:
        ours = translated(err, url, pin)
        if ours is None:
            raise
        raise ours from err


def translated(err: BaseException, url: str, pin: ObjectPin | None = None) -> OSError | None:
    """streamx's error for what an fsspec file system raised for ``url``, or ``None`` where
    it means what it says. fsspec's file systems keep the real failure only down the chain:

    - a ``412`` to a request that carried ``pin``'s ``If-Match`` (s3fs: an ``OSError`` with
      the server's message): ``pin``'s :class:`~streamx.exceptions.ObjectChangedError`;
    - the Hugging Face Hub refusing a repository (``FileNotFoundError``): a
      ``PermissionError`` with the Hub's message;
    - a certificate that failed verification (fsspec's HTTP: ``FileNotFoundError``):
      :class:`~streamx.exceptions.TlsCertificateError` naming the host and the reason.
    """
    if pin is not None and _precondition_failed(err):
        return pin.refused()
    return hub_access_error(err, url) or certificate_error(err, url)


def _precondition_failed(err: BaseException) -> bool:
    """Whether the server refused the request's ``If-Match`` (HTTP 412): s3fs's error need
    not name it, so the code is read from the botocore error it chains."""
    seen: BaseException | None = err
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "PreconditionFailed" or status == 412:
                return True
        if "PreconditionFailed" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
