"""An HTTPS server on a free loopback port, for download tests over TLS.

Serves one object at any path to ``GET`` and ``HEAD`` (``Range: bytes=a-b`` answered with
``206``), HTTP/1.1 keep-alive, with a self-signed certificate for ``127.0.0.1`` written to
``cert_path`` (point ``AWS_CA_BUNDLE`` at it).
"""

from __future__ import annotations

import datetime
import ipaddress
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["TlsServer"]

_RANGE = re.compile(r"bytes=(\d+)-(\d+)")


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class TlsServer:
    def __init__(self, data: bytes, directory: Path) -> None:
        self.data = data
        self.cert_path, key_path = _self_signed(directory)
        served = data

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                found = _RANGE.fullmatch(self.headers.get("Range", ""))
                start, end = (0, len(served) - 1) if found is None else map(int, found.groups())
                self.send_response(200 if found is None else 206)
                self.send_header("Content-Length", str(end - start + 1))
                if found is not None:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(served)}")
                self.end_headers()
                if body:
                    self.wfile.write(served[start : end + 1])

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str = "obj.bin") -> str:
        return f"https://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> TlsServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
