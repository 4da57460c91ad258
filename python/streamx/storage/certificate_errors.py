"""A certificate failure that an fsspec file system reports as a missing file.

fsspec's HTTP file system turns any failure of its HEAD or GET into ``FileNotFoundError``,
a certificate that fails verification included: a user who forgot ``SSL_CERT_FILE`` would
read "no such file". The failure is still in the exception's chain.
"""

from __future__ import annotations

import ssl
from urllib.parse import urlparse

from streamx.exceptions import TlsCertificateError

__all__ = ["certificate_error"]


def certificate_error(err: BaseException, url: str) -> TlsCertificateError | None:
    """The :class:`TlsCertificateError` hidden in ``err``'s chain, naming ``url``'s host,
    or ``None`` when no certificate failed."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, TlsCertificateError):
            return cause
        if isinstance(cause, ssl.SSLCertVerificationError):
            host = urlparse(url).netloc or url
            reason = getattr(cause, "verify_message", None) or str(cause)
            return TlsCertificateError(host, f"{reason} (reading {url})")
        cause = cause.__cause__ or cause.__context__
    return None
