"""Fetching a stream's ``index.json`` so that a corrupt one never sticks.

The index is downloaded under a temporary name and parsed there; only an index that parses
takes its final name, so a bad answer from the server fails this run and not every later
one. A local index that fails to parse (left by an older streamx, a crash or a hand edit) is
fetched again when the stream has a remote, with a warning.

Nothing declares the index's own size, so a download of a file whose size is not given
(the index, above all) is bounded by ``STREAMX_MAX_INDEX_BYTES`` (default 1 GiB, read by
:func:`~streamx.storage.settings.max_index_bytes`): a larger announced size is refused
before any body is read, and a body running past it stops at the bound, before a byte past
it is written. The index is fetched in one GET, with no ``HEAD`` for its size first
(:func:`~streamx.storage.download.one_get`): the GET announces it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

from streamx.exceptions import CorruptIndexError
from streamx.format.index import INDEX_BASENAME, ShardList, parse_index
from streamx.runtime.atomic_write import replacing
from streamx.storage.download import one_get, temp_path_for

__all__ = ["load_index_checked"]

Download = Callable[[str, str], object]


def load_index_checked(download: Download, local: str, split: str, has_remote: bool) -> ShardList:
    """The stream's shards, from its local index, fetching or re-fetching it as needed.

    Args:
        download: The stream's ``_download_file(from_basename, to_basename)``.
        local: The stream's local directory.
        split: Its split.
        has_remote: Whether the index can be fetched (again).

    Raises:
        RuntimeError: If there is no remote and no local ``index.json``.
        CorruptIndexError: If the index (as fetched) is not a valid MDS index.
    """
    path = os.path.join(local, split, INDEX_BASENAME)
    if not os.path.exists(path):
        if not has_remote:
            raise RuntimeError(f"No `remote` provided, but local file {path} does not exist either")
        return _fetch(download, local, split)
    try:
        return parse_index(local, split, path)
    except CorruptIndexError as err:
        if not has_remote:
            raise
        warnings.warn(f"{err}; fetching it again from the remote", UserWarning, stacklevel=4)
    return _fetch(download, local, split)


def _fetch(download: Download, local: str, split: str) -> ShardList:
    path = os.path.join(local, split, INDEX_BASENAME)
    # A download's temporary name, which `streamx cache clean` collects once abandoned.
    with replacing(path, temp=temp_path_for) as tmp, one_get():
        download(INDEX_BASENAME, os.path.basename(tmp))
        try:
            shards = parse_index(local, split, tmp)
        except CorruptIndexError as err:
            if type(err) is not CorruptIndexError:
                raise  # IndexJSONError keeps json's own signature and message
            # Name the index as the user knows it, not the temporary file it was parsed in.
            raise CorruptIndexError(
                str(err).replace(tmp, f"{path} (as fetched from the remote)")
            ) from err
    return shards
