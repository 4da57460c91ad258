"""A throwaway certificate authority and a server certificate it signs, made by the test.

The server certificate is a leaf (not a CA) for ``localhost`` and ``127.0.0.1``, as a real
store's is; the CA's PEM is what a user points ``AWS_CA_BUNDLE`` (or ``SSL_CERT_FILE``,
``REQUESTS_CA_BUNDLE``) at. ``trust_test_ca`` makes one and has this process's clients trust
it through the named variables alone.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CA_VARIABLES", "Certs", "clear_ca_variables", "make_certs", "trust_test_ca"]

# Every variable that points a client of ours (Rust TLS, Python's ssl, requests, botocore,
# aiohttp) at a CA bundle.
CA_VARIABLES = ("AWS_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR")


@dataclass(frozen=True)
class Certs:
    ca: Path  # the CA certificate (PEM): the bundle clients trust
    chain: Path  # the server's certificate (PEM)
    key: Path  # the server's private key (PEM)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_certs(directory: Path, names: tuple[str, ...] = ("localhost", "127.0.0.1")) -> Certs:
    """A CA and a server certificate valid for ``names`` (host names or IP addresses)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("streamx test CA"))
        .issuer_name(_name("streamx test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    certs = Certs(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    certs.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    certs.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certs


def clear_ca_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CA bundle named by the environment, and the default TLS stack (a test that wants
    Python's ``ssl`` sets ``STREAMX_RUST_TLS`` after this)."""
    for name in (*CA_VARIABLES, "STREAMX_RUST_TLS"):
        monkeypatch.delenv(name, raising=False)


def trust_test_ca(
    directory: Path,
    monkeypatch: pytest.MonkeyPatch,
    variables: Iterable[str] = ("SSL_CERT_FILE",),
) -> Certs:
    """A CA and server certificate made in ``directory`` (see ``make_certs``), trusted by this
    process's clients through ``variables`` only: every other CA variable is cleared."""
    clear_ca_variables(monkeypatch)
    certs = make_certs(directory)
    for name in variables:
        monkeypatch.setenv(name, str(certs.ca))
    return certs
