"""The Databricks SDK client behind ``dbfs:`` URLs, and its failures in streamx's words.

Credentials are the SDK's to find (``DATABRICKS_HOST`` and ``DATABRICKS_TOKEN``, a
``~/.databrickscfg`` profile named by ``DATABRICKS_CONFIG_PROFILE``, OAuth, a notebook's
context...); streamx only bounds the time each request may take. The SDK waits 60 s per
socket read and then retries transient failures for 300 s by default: a read that never
ends would hold a download for six minutes before streamx's own retries even start, so
streamx sets both.

Imported only when a ``dbfs:`` URL is used: it imports the SDK.
"""

from __future__ import annotations

import os

import requests
import urllib3
from databricks.sdk import WorkspaceClient
from databricks.sdk.config import Config
from databricks.sdk.errors import NotFound, PermissionDenied, Unauthenticated
from databricks.sdk.errors.base import DatabricksError

from streamx.exceptions import DownloadTimeoutError

__all__ = ["HTTP_TIMEOUT_ENV", "RETRY_TIMEOUT_ENV", "failure", "workspace_client"]

HTTP_TIMEOUT_ENV = "STREAMX_DATABRICKS_HTTP_TIMEOUT"
RETRY_TIMEOUT_ENV = "STREAMX_DATABRICKS_RETRY_TIMEOUT"
_DEFAULT_SECONDS = 60.0
# A body that breaks mid-way is resumed by the SDK from where it stopped; without a cap it
# resumes for as long as each try brings a byte more.
_MAX_RESUMES = 3


def _seconds(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def workspace_client() -> WorkspaceClient:
    """A client configured by the SDK's own chain, with bounded request times.

    ``STREAMX_DATABRICKS_HTTP_TIMEOUT`` (seconds any request may wait for the server, to
    connect or for the next bytes of an answer) and ``STREAMX_DATABRICKS_RETRY_TIMEOUT``
    (seconds the SDK goes on retrying a transient failure) set the SDK's
    ``http_timeout_seconds`` and ``retry_timeout_seconds``; both are 60 by default. They
    bound the SDK's first request too, made while the client is built.

    Raises:
        ValueError: If a variable is not a positive number, or the SDK finds no workspace
            or credentials (its message lists where it looked).
    """
    http_timeout = _seconds(HTTP_TIMEOUT_ENV) or _DEFAULT_SECONDS
    retry_timeout = _seconds(RETRY_TIMEOUT_ENV) or _DEFAULT_SECONDS
    config = Config(
        http_timeout_seconds=http_timeout, retry_timeout_seconds=int(max(retry_timeout, 1))
    )
    # The presigned-URL and storage-proxy transfers wait this long instead.
    config.files_ext_network_transfer_inactivity_timeout_seconds = http_timeout
    config.files_ext_client_download_max_total_recovers = _MAX_RESUMES
    return WorkspaceClient(config=config)


def failure(err: BaseException, host: str | None, what: str, url: str) -> OSError:
    """``err`` (raised by the SDK while doing `what` to `url`) as the error streamx raises.

    A missing file is ``FileNotFoundError`` in the words of every other scheme; refused
    credentials are ``PermissionError``; a request or retries that ran out of time are
    ``TimeoutError`` (``DownloadTimeoutError`` while reading); each, like any other
    failure, names the workspace and the URL.
    """
    where = f"Databricks workspace {host or '(no host configured)'}"
    if isinstance(err, NotFound):
        return FileNotFoundError(f"Object {url} not found.")
    if isinstance(err, (PermissionDenied, Unauthenticated)):
        return PermissionError(
            f"{where} refused to {what} {url}: {err} (the SDK found credentials through "
            "DATABRICKS_HOST/DATABRICKS_TOKEN or a profile; check them and the volume's grants)"
        )
    message = f"{where}: {what} {url} failed: {type(err).__name__}: {err}"
    if _timed_out(err):
        reading = what in ("download", "look up", "list")
        return DownloadTimeoutError(message) if reading else TimeoutError(message)
    return OSError(message)


def _timed_out(err: BaseException) -> bool:
    """Whether a wait ran out: requests reports a body that stalls as a ``ConnectionError``
    holding urllib3's ``ReadTimeoutError``; the SDK's retries, spent, as ``TimeoutError``."""
    seen: list[BaseException] = [err]
    while seen:
        cause = seen.pop()
        if isinstance(cause, (TimeoutError, requests.Timeout, urllib3.exceptions.TimeoutError)):
            return not isinstance(cause, DatabricksError)
        seen += [a for a in cause.args if isinstance(a, BaseException)]
        seen += [c for c in (cause.__cause__, cause.__context__) if c is not None]
    return False
