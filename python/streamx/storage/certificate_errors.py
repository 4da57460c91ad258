"""A certificate that failed verification, in streamx's words: :class:`TlsCertificateError`
naming the host and the reason, whichever TLS stack refused it.

fsspec's HTTP file system turns any failure of its HEAD or GET into ``FileNotFoundError``,
a certificate that fails verification included: a user who forgot ``SSL_CERT_FILE`` would
read "no such file". The failure is still in the exception's chain. Python's ``ssl`` (the
``http.client`` requests) raises a bare ``ssl.SSLCertVerificationError``, which names no
host; Rust TLS sessions raise :class:`TlsCertificateError` themselves
(:mod:`~streamx.storage.http_pool`).
"""

from __future__ import annotations

import ssl
from urllib.parse import urlparse

from streamx.exceptions import TlsCertificateError

__all__ = ["certificate_error", "refused_certificate"]


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


def refused_certificate(
    err: ssl.SSLCertVerificationError, host: str, port: int | None, request: str
) -> TlsCertificateError:
    """``err`` (raised by Python's ``ssl`` while ``request``, e.g. ``"GET <url>"``, was
    sent to ``host``) as the :class:`TlsCertificateError` a Rust TLS session raises."""
    where = host if port is None else f"{host}:{port}"
    reason = err.verify_message or str(err)
    return TlsCertificateError(where, f"{reason} ({request})")
