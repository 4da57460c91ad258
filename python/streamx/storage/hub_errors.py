"""The Hugging Face Hub's own words when it refuses a repository.

``HfFileSystem`` turns a gated or private repository into ``FileNotFoundError("...
(repository not found)")``; the Hub's message (what to accept, or to log in) is only on an
exception further down the chain. This finds it, so the user reads what the Hub said.
"""

from __future__ import annotations

import re

__all__ = ["hub_access_error"]

_REPO = re.compile(r"^hf://(datasets|spaces|models)/([^/@]+/[^/@]+)")


def _status(err: BaseException) -> int | None:
    response = getattr(err, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def hub_access_error(err: BaseException, url: str) -> PermissionError | None:
    """A ``PermissionError`` naming the repository of ``url`` and the Hub's message, when
    ``err`` (or what caused it) is the Hub refusing access (401 or 403); else ``None``."""
    found = _REPO.match(url)
    if found is None:
        return None
    cause: BaseException | None = err
    while cause is not None:
        message = getattr(cause, "server_message", None)
        if _status(cause) in (401, 403) and message:
            kind = found.group(1).rstrip("s")
            return PermissionError(
                f"{url}: the Hugging Face Hub refused access to {kind} {found.group(2)}: "
                f"{str(message).strip()}"
            )
        cause = cause.__cause__ or cause.__context__
    return None
