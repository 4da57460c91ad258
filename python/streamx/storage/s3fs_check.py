"""Refuse an s3fs too old to work, when a writer is built rather than at its first upload.

Where the newest boto3 is installed, ``pip install s3fs`` can resolve to s3fs 0.4.2 (modern
s3fs pins an older botocore through aiobotocore), and that release fails on every call
with ``TypeError: Session.__init__() got an unexpected keyword argument``. streamx uses
s3fs's asynchronous API (``_call_s3``), which 2023.1.0 has and the ``[s3]`` extra requires.
"""

from __future__ import annotations

import re
from importlib import metadata

__all__ = ["S3FS_MINIMUM", "check_s3fs_version", "require_s3fs"]

S3FS_MINIMUM = "2023.1.0"


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: ``"2023.12.2"`` -> ``(2023, 12, 2)``."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group(0).split(".")) if found else ()


def check_s3fs_version(version: str) -> None:
    """Raise unless `version` of s3fs is one streamx works with.

    Args:
        version: s3fs's version, as ``importlib.metadata`` reports it.

    Raises:
        ImportError: for a release older than :data:`S3FS_MINIMUM`, naming both versions
            and the command that installs a working one.

    Examples:
        >>> check_s3fs_version("2024.6.1")
        >>> check_s3fs_version("0.4.2")
        Traceback (most recent call last):
        ...
        ImportError: s3fs 0.4.2 is too old for s3:// ...
    """
    if _release(version) < _release(S3FS_MINIMUM):
        raise ImportError(
            f"s3fs {version} is too old for s3:// (streamx needs s3fs>={S3FS_MINIMUM}; older "
            "releases fail with 'Session.__init__() got an unexpected keyword argument'). "
            f"Run: pip install 's3fs>={S3FS_MINIMUM}' (or pip install 'streamx-data[s3]'); if pip "
            "keeps choosing an old s3fs, the installed boto3/botocore is newer than any "
            "aiobotocore allows: let pip downgrade it, or set AWS credentials and a region "
            "or S3_ENDPOINT_URL so streamx uploads without s3fs."
        )


def require_s3fs() -> None:
    """Raise ``ImportError`` if s3fs is missing or too old (see :func:`check_s3fs_version`)."""
    try:
        version = metadata.version("s3fs")
    except metadata.PackageNotFoundError as err:
        raise ImportError(
            f"s3:// needs s3fs>={S3FS_MINIMUM} here: pip install 'streamx-data[s3]'"
        ) from err
    check_s3fs_version(version)
