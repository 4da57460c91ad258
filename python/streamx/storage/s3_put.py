"""S3 uploads as plain signed HTTP PUTs over the pooled connections of ``s3_direct``.

Chosen by measurement (``benches/bench_s3_clients.py``, results in ``benches/README.md``):
a PUT here costs less CPU per byte than s3fs, boto3 or obstore, whereas obstore would add a
16 MB native dependency that hangs in a forked child after the parent used it, and that
reads neither profiles nor ``S3_ENDPOINT_URL``. The route is taken exactly when
``s3_direct.route_for`` is sure of the request botocore would make, so uploads then need
neither s3fs nor botocore.

One PUT carries the whole file, which S3 allows up to 5 GiB; larger files (MDS shards are
far smaller) go through s3fs, which splits them into a multipart upload. The body is not
signed: its CRC32 travels in ``x-amz-checksum-crc32``, which S3 checks before it stores the
object, and which the GET route checks again on every download.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import zlib
from typing import BinaryIO

from streamx.storage import http_pool, s3_direct
from streamx.storage.filesystems import split_url
from streamx.storage.http_page import MOST_PAGE_BYTES, error_page
from streamx.storage.sigv4_request import sign_request

__all__ = ["MAX_SINGLE_PUT", "S3PutError", "bucket_exists", "put_file", "put_route"]

# S3's limit for one PutObject.
MAX_SINGLE_PUT = 5 << 30
_BLOCK = 1 << 20


class S3PutError(OSError):
    """S3 answered a PUT with an error status."""

    def __init__(self, url: str, status: int, code: str, message: str) -> None:
        super().__init__(f"PUT {url}: HTTP {status} {code}: {message}".rstrip(": "))
        self.status = status
        self.code = code


def put_route(url: str, size: int) -> s3_direct.S3Route | None:
    """The direct route for uploading `size` bytes to `url`, or ``None`` for s3fs.

    Args:
        url: The destination, ``s3://bucket/key``.
        size: The file's size in bytes; over :data:`MAX_SINGLE_PUT` there is no direct route.
    """
    scheme, bucket, path = split_url(url)
    if scheme != "s3" or size > MAX_SINGLE_PUT:
        return None
    return s3_direct.route_for(bucket, path.lstrip("/"))


def put_file(route: s3_direct.S3Route, local_path: str, timeout: float = 60.0) -> None:
    """Upload `local_path` in one signed PUT along `route`.

    Args:
        route: From :func:`put_route`.
        local_path: The file to send.
        timeout: Seconds any one socket operation may block.

    Raises:
        FileNotFoundError: if `local_path` is missing, or the bucket does not exist.
        PermissionError: if S3 refuses the credentials or the signature (HTTP 403).
        S3PutError: for other error statuses (retryable ones included; callers retry).
        OSError: for network failures.
    """
    with open(local_path, "rb") as body:
        size, crc = _crc32(body)
        headers = {
            "content-length": str(size),
            "x-amz-checksum-crc32": base64.b64encode(crc.to_bytes(4, "big")).decode(),
            "x-amz-sdk-checksum-algorithm": "CRC32",
        }
        acl = os.environ.get("S3_CANNED_ACL")
        if acl:
            headers["x-amz-acl"] = acl
        if route.requester_pays:
            headers["x-amz-request-payer"] = "requester"
        host = route.host if route.port is None else f"{route.host}:{route.port}"
        signed = sign_request(
            "PUT", host, route.path, route.region, route.credentials.current(), headers
        )
        pool = http_pool.pool_for(route.scheme, route.host, route.port)
        conn, reused = pool.take(timeout)
        try:
            try:
                response, sock = _send(conn, route.path, signed, body)
            except http_pool.STALE_CONNECTION:
                if not reused:
                    raise
                # The server closed the idle connection before reading: send again.
                conn.close()
                conn, _ = pool.take(timeout, fresh=True)
                response, sock = _send(conn, route.path, signed, body)
            if response.status != 200:
                # Read briefly: a page that stalls must not hold the PUT to its timeout.
                raise _error(route.url, response.status, error_page(response, sock))
            response.read(MOST_PAGE_BYTES)  # read to its end, the connection goes back
        except BaseException:
            conn.close()
            raise
    pool.give_back(conn)


def bucket_exists(bucket: str, timeout: float = 60.0) -> bool | None:
    """Whether `bucket` exists and these credentials may use it (a signed ``HEAD``), or
    ``None`` when the direct route does not serve this configuration.

    Raises:
        S3PutError: for answers other than 200, 403 and 404.
        OSError: for network failures.
    """
    route = s3_direct.route_for(bucket, "k")
    if route is None:
        return None
    path = route.path[: -len("k")]  # the bucket's own path: "/bucket/" or "/"
    host = route.host if route.port is None else f"{route.host}:{route.port}"
    signed = sign_request("HEAD", host, path, route.region, route.credentials.current(), {})
    pool = http_pool.pool_for(route.scheme, route.host, route.port)
    conn, _ = pool.take(timeout, fresh=True)
    try:
        conn.request("HEAD", path, headers=signed)
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    if response.status in (403, 404):
        return False
    if response.status != 200:
        raise S3PutError(f"s3://{bucket}", response.status, str(response.reason), "")
    return True


def _crc32(body: BinaryIO) -> tuple[int, int]:
    size, crc = 0, 0
    while block := body.read(_BLOCK):
        crc = zlib.crc32(block, crc)
        size += len(block)
    return size, crc


def _send(
    conn: http.client.HTTPConnection, path: str, headers: dict[str, str], body: BinaryIO
) -> tuple[http.client.HTTPResponse, socket.socket | None]:
    """The answer, and its connection's socket (kept here: ``getresponse`` drops it from
    the connection when the answer says the connection closes)."""
    body.seek(0)
    conn.blocksize = _BLOCK  # http.client's default of 8 KiB costs a syscall per 8 KiB
    conn.request("PUT", path, body=body, headers=headers)
    sock = conn.sock
    return conn.getresponse(), sock


def _error(url: str, status: int, body: bytes) -> OSError:
    text = body.decode("utf-8", "replace")
    code = s3_direct.xml_field(text, "Code") or http.client.responses.get(status, "")
    message = s3_direct.xml_field(text, "Message")
    if status == 404:
        return FileNotFoundError(f"PUT {url}: HTTP 404 {code}: {message}")
    if status == 403:
        return PermissionError(f"PUT {url}: HTTP 403 {code}: {message}")
    return S3PutError(url, status, code, message)
