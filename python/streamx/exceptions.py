"""Exceptions raised by streamx.

Every class derives from :class:`StreamxError` and also from the builtin exception a user of
mosaicml-streaming already catches there (``ValueError`` for bad data, ``TimeoutError`` for a
stalled download, ``OSError`` for a broken transfer), so existing ``except`` clauses keep
working while ``except StreamxError`` catches everything streamx raises on purpose.

The Rust extension raises these classes by name; the names it uses are listed once in
``streamx._core.exception_names()`` and a test checks each resolves here.

Examples:
    >>> from streamx.exceptions import ChecksumError, StreamxError
    >>> issubclass(ChecksumError, ValueError) and issubclass(ChecksumError, StreamxError)
    True
"""

from __future__ import annotations

import json
import ssl

__all__ = [
    "ChecksumError",
    "ChecksumMismatchError",
    "ColumnTypeError",
    "ColumnValueError",
    "ConvertError",
    "ConvertRowError",
    "CorruptIndexError",
    "CorruptShardError",
    "DownloadTimeoutError",
    "EngineTaskError",
    "HttpResponseError",
    "IndexEncodingError",
    "IndexJSONError",
    "InternalError",
    "NeedsPythonEncoding",
    "ObjectChangedError",
    "RangeIgnoredError",
    "RemoteTooLargeError",
    "S3ResponseError",
    "SizeMismatchError",
    "StaleIndexError",
    "StreamxError",
    "TlsCertificateError",
    "TruncatedDownloadError",
    "UnsafeCacheDirError",
    "UploadFailedError",
]


class StreamxError(Exception):
    """Base of every streamx-specific error."""


class InternalError(StreamxError, RuntimeError):
    """A bug in streamx (a Rust panic), caught at the boundary and naming what was read."""


class CorruptShardError(StreamxError, ValueError):
    """A shard file's bytes contradict its header, offsets or index entry."""


class CorruptIndexError(StreamxError, ValueError):
    """An ``index.json`` that is empty, not JSON, or not a valid MDS index."""


class IndexJSONError(CorruptIndexError, json.JSONDecodeError):
    """An ``index.json`` that is empty or not JSON; also the ``json.JSONDecodeError``
    mosaicml-streaming raises there."""


class IndexEncodingError(CorruptIndexError, UnicodeDecodeError):
    """An ``index.json`` that is not UTF-8 text, naming the file; also the
    ``UnicodeDecodeError`` mosaicml-streaming raises there."""

    def __init__(self, path: str, err: UnicodeDecodeError) -> None:
        UnicodeDecodeError.__init__(self, err.encoding, err.object, err.start, err.end, err.reason)
        self.path = path

    def __str__(self) -> str:
        detail = UnicodeDecodeError.__str__(self)
        return f"Index file at {self.path} is empty or corrupted: not UTF-8 text ({detail})."


class ChecksumError(StreamxError, ValueError):
    """A downloaded or decompressed file whose digest differs from the one in the index."""


class ColumnTypeError(StreamxError, TypeError, AttributeError):
    """A writer got a value of the wrong type for its column's encoding.

    Also an ``AttributeError``, which mosaicml-streaming raises there.
    """


class ColumnValueError(StreamxError, ValueError):
    """A writer got a value of the right type its column's encoding still cannot store
    (wrong ndarray shape or dtype, a string that is no number...)."""


class StaleIndexError(StreamxError, ValueError):
    """A cached ``index.json`` that no longer describes the remote's files (the dataset was
    rewritten there): delete the local directory or use a fresh one."""


class NeedsPythonEncoding(StreamxError, TypeError):
    """Internal: the Rust fast path declined a value; the exact Python encoder takes over."""


class DownloadTimeoutError(StreamxError, TimeoutError):
    """One download attempt ran past its timeout."""


class TruncatedDownloadError(StreamxError, OSError):
    """The bytes received do not match the object's size."""


class SizeMismatchError(TruncatedDownloadError):
    """The remote object's size (announced, or in a range's ``Content-Range``) differs from
    the size expected of it, the one in ``index.json``: the object was rewritten, or the
    index is stale. Retried like other faults (a proxy may cut a body and its length alike);
    a dataset reports the last one as a :class:`StaleIndexError`.

    Args:
        message: What was seen, naming the URL.
        size: The object's size as the server gave it, when known.
    """

    def __init__(self, message: str, size: int | None = None) -> None:
        super().__init__(message)
        self.size = size


class ChecksumMismatchError(StreamxError, OSError):
    """An S3 body that does not match the checksum S3 stored with the object.

    An ``OSError`` (a transfer fault, retried like one) rather than a :class:`ChecksumError`,
    which is about a file contradicting the dataset's own index.
    """


class RangeIgnoredError(StreamxError, OSError):
    """The server answered a ranged GET with the whole object: fetch it in one GET."""


class ObjectChangedError(StreamxError, OSError):
    """A remote object changed (another ``ETag`` or ``Last-Modified``, or a ``412`` to an
    ``If-Match``) while its parts were downloaded: parts of two versions must not be mixed."""


class RemoteTooLargeError(StreamxError, OSError):
    """A remote file whose size nothing declares (``index.json``) is larger than the bound
    set for it (``STREAMX_MAX_INDEX_BYTES``)."""


class HttpResponseError(StreamxError, OSError):
    """An HTTP server answered a request with an error status.

    Args:
        url: The object requested.
        status: The HTTP status.
        code: The server's error code (S3's ``NoSuchKey``, ``AccessDenied``...), or ``''``.
        message: The server's error message, or ``''``.
        method: The request's method, for the message.
    """

    def __init__(self, url: str, status: int, code: str, message: str, method: str = "GET") -> None:
        super().__init__(f"{method} {url}: HTTP {status} {code}: {message}".rstrip(": "))
        self.status = status
        self.code = code


class TlsCertificateError(StreamxError, ssl.SSLCertVerificationError):
    """An HTTPS server's certificate failed verification (never retried in the clear).

    Args:
        host: The server's host name (or address).
        reason: Why verification failed.
    """

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"HTTPS {host}: the server's certificate failed verification: {reason}")
        self.host = host
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])  # ssl.SSLError would print the args tuple


class S3ResponseError(HttpResponseError):
    """S3 answered a request with an error status (``code`` is S3's error code)."""


class ConvertError(StreamxError, ValueError):
    """An input a converter cannot turn into MDS: an unreadable file, a row that does not fit
    its column, a destination it cannot write to, or a resume against a different plan.

    The message names the input file (or partition) and, for a row, its number there.
    """


class ConvertRowError(ConvertError):
    """A row of an engine's partition (Spark, Ray, Dask) could not be written; the message
    names the partition and the row, and the original error is the ``__cause__``."""


class EngineTaskError(StreamxError, RuntimeError):
    """A task of an engine's conversion job (Spark) failed outside its rows: a Python worker
    that crashed or was killed, a lost executor. The message names the partition and task
    attempt and the engine's own reason; the engine's error is the ``__cause__``."""


class UploadFailedError(StreamxError, RuntimeError):
    """A background upload of a writer's file failed; raised on the next writer call."""


class UnsafeCacheDirError(StreamxError, PermissionError):
    """A cache directory another local user could write into (or planted): streamx refuses it."""
