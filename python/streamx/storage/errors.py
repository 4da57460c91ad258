"""Download failures shared by every route (re-exported by :mod:`streamx.storage.download`)."""

from __future__ import annotations

__all__ = ["DownloadTimeoutError", "RangeIgnoredError", "TruncatedDownloadError"]


class DownloadTimeoutError(TimeoutError):
    """One download attempt ran past its timeout (a stalled body included)."""


class TruncatedDownloadError(OSError):
    """The bytes received do not match the size expected (too few, or a server that
    announced or sent more than asked for)."""


class RangeIgnoredError(OSError):
    """The server answered a ranged GET with the whole object: fetch it in one GET."""
