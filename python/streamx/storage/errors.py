"""Download failures shared by every route (re-exported by :mod:`streamx.storage.download`).

The classes live in :mod:`streamx.exceptions`, under :class:`~streamx.exceptions.StreamxError`.
"""

from __future__ import annotations

from streamx.exceptions import DownloadTimeoutError, RangeIgnoredError, TruncatedDownloadError

__all__ = ["DownloadTimeoutError", "RangeIgnoredError", "TruncatedDownloadError"]
