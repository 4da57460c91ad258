"""``dbfs:`` URLs as an fsspec filesystem, over the Databricks SDK.

Unity Catalog volumes (``dbfs:/Volumes/<catalog>/<schema>/<volume>/...``) go through the
SDK's Files API (``WorkspaceClient().files``); any other ``dbfs:/`` path is the legacy
DBFS root, through its DBFS API (``WorkspaceClient().dbfs``), as mosaicml-streaming reads
and writes them. Being an fsspec filesystem, it serves every place streamx reads or writes
a remote file: the dataset's downloads (atomic, retried and bounded by
:func:`streamx.storage.download.download_file`), the writers' uploads, ``streamx cp`` and
listings.

A file is read whole, in one stream: neither public SDK call takes a byte range, so a
request for one raises :class:`~streamx.exceptions.RangeIgnoredError` and the download
falls back to one GET per file. Imported only when a ``dbfs:`` URL is used.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import requests
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import NotFound
from databricks.sdk.errors.base import DatabricksError
from fsspec import AbstractFileSystem

from streamx.exceptions import RangeIgnoredError
from streamx.storage.databricks_client import failure, workspace_client

__all__ = ["DatabricksFileSystem"]

# What one read asks of the SDK's stream: its reads copy what they gather, so a large read
# made of small pieces costs quadratic copying; the pieces are joined here instead.
_PIECE = 1 << 20
# The DBFS API answers at most 1 MiB per read.
_DBFS_READ = 1 << 20
# The SDK's errors (``DatabricksError``), requests' and the SDK's own I/O errors are all
# ``OSError``s.
_SDK_ERRORS = (DatabricksError, requests.RequestException, OSError)


def _is_volume(path: str) -> bool:
    return path == "/Volumes" or path.startswith("/Volumes/")


class DatabricksFileSystem(AbstractFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """Files of a Databricks workspace, by their ``/Volumes/...`` or DBFS path.

    Args:
        client: The SDK client; by default one configured from the environment (see
            :func:`streamx.storage.databricks_client.workspace_client`).
    """

    protocol = ("dbfs",)
    root_marker = "/"

    def __init__(self, client: WorkspaceClient | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client if client is not None else workspace_client()

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path)
        if text.startswith("dbfs:"):
            text = text[len("dbfs:") :]
        return "/" + text.lstrip("/")

    def _failure(self, err: BaseException, what: str, path: str) -> OSError:
        return failure(err, self.client.config.host, what, f"dbfs:{path}")

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        """The file's size and kind (``file`` or ``directory``).

        Raises:
            FileNotFoundError: If nothing is at `path`.
            PermissionError: If the workspace refuses the credentials.
        """
        path = self._strip_protocol(path)
        try:
            if not _is_volume(path):
                status = self.client.dbfs.get_status(path)
                kind = "directory" if status.is_dir else "file"
                return {"name": path, "size": status.file_size or 0, "type": kind}
            try:
                meta = self.client.files.get_metadata(path)
                return {"name": path, "size": int(meta.content_length or 0), "type": "file"}
            except NotFound:
                self.client.files.get_directory_metadata(path)
                return {"name": path, "size": 0, "type": "directory"}
        except _SDK_ERRORS as err:
            raise self._failure(err, "look up", path) from err

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        """The entries of the directory `path` (or the file itself).

        Raises:
            FileNotFoundError: If nothing is at `path`.
        """
        path = self._strip_protocol(path)
        try:
            if _is_volume(path):
                found = [
                    {"name": e.path, "size": e.file_size or 0, "type": _kind(e.is_directory)}
                    for e in self.client.files.list_directory_contents(path)
                ]
            else:
                found = [
                    {"name": e.path, "size": e.file_size or 0, "type": _kind(e.is_dir)}
                    for e in self.client.dbfs.list(path)
                ]
        except NotFound:
            found = [self.info(path)]  # a file, or FileNotFoundError
        except _SDK_ERRORS as err:
            raise self._failure(err, "list", path) from err
        return found if detail else [entry["name"] for entry in found]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> _Download:
        if mode != "rb":
            raise NotImplementedError(
                f"dbfs:{path}: files are written whole, with put_file (mode {mode!r})"
            )
        return _Download(self, self._strip_protocol(path))

    def put_file(self, lpath: str, rpath: str, callback: Any = None, **kwargs: Any) -> None:
        """Upload the local file `lpath` to `rpath`, replacing what is there.

        Raises:
            PermissionError: If the workspace refuses the credentials.
            OSError: If the upload fails, or the workspace then holds another size.
        """
        path = self._strip_protocol(rpath)
        with open(lpath, "rb") as source:  # a missing local file is no upload failure
            size = source.seek(0, 2)
            source.seek(0)
            try:
                if _is_volume(path):
                    self.client.files.upload(path, source, overwrite=True)
                else:
                    self.client.dbfs.upload(path, source, overwrite=True)
            except _SDK_ERRORS as err:
                raise self._failure(err, "upload", path) from err
        # The Files API has been seen to answer an upload that stored nothing: check.
        stored = self.info(path)["size"]
        if stored != size:
            raise OSError(f"dbfs:{path}: uploaded {size} bytes, the workspace holds {stored}")

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        try:
            if _is_volume(path):
                self.client.files.create_directory(path)
            else:
                self.client.dbfs.mkdirs(path)
        except _SDK_ERRORS as err:
            raise self._failure(err, "create", path) from err

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self.mkdir(path)  # both APIs create the parents and accept an existing directory

    def rm_file(self, path: str) -> None:
        path = self._strip_protocol(path)
        try:
            if _is_volume(path):
                self.client.files.delete(path)
            else:
                self.client.dbfs.delete(path)
        except _SDK_ERRORS as err:
            raise self._failure(err, "delete", path) from err

    def _rm(self, path: str) -> None:
        self.rm_file(path)

    def open_body(self, path: str) -> tuple[BinaryIO, int]:
        """The file's bytes as a stream, and the most to ask of one read."""
        try:
            if _is_volume(path):
                contents = self.client.files.download(path).contents
                assert contents is not None  # the SDK sets it on every answer
                return contents, _PIECE
            return self.client.dbfs.download(path), _DBFS_READ
        except _SDK_ERRORS as err:
            raise self._failure(err, "download", path) from err


def _kind(is_directory: bool | None) -> str:
    return "directory" if is_directory else "file"


class _Download:
    """One file read from its start to its end, in one stream opened at the first read."""

    def __init__(self, fs: DatabricksFileSystem, path: str) -> None:
        self._fs, self.path = fs, path
        self._body: BinaryIO | None = None
        self._piece = _PIECE
        self._position = 0
        self.closed = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0 and offset == self._position:
            return offset
        raise RangeIgnoredError(f"dbfs:{self.path}: the Databricks SDK reads files whole")

    def read(self, size: int = -1) -> bytes:
        if self._body is None:
            self._body, self._piece = self._fs.open_body(self.path)
        pieces: list[bytes] = []
        left = size
        try:
            while left != 0:
                piece = self._body.read(self._piece if left < 0 else min(left, self._piece))
                if not piece:
                    break
                pieces.append(piece)
                left -= len(piece) if left > 0 else 0
        except _SDK_ERRORS as err:
            raise self._fs._failure(err, "download", self.path) from err
        data = b"".join(pieces)
        self._position += len(data)
        return data

    def close(self) -> None:
        if self._body is not None and not self.closed:
            self._body.close()
        self.closed = True

    def __enter__(self) -> _Download:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
