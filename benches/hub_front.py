"""nginx over HTTPS in front of the local Hub server: one endpoint that every reader of
``bench_in_place_https.py`` reaches, capped at a rate per connection as S3 caps each GET.

- ``/api/...`` (repository info, tree listings, paths-info) goes to the Python Hub server
  (``tests/in_place/hub_server.py``), which only lists: nginx sends no file through it;
- ``/datasets/ORG/NAME/resolve/REV/PATH`` is the file itself, served by nginx with the
  ``X-Repo-Commit`` header ``hf_hub_download`` asks for (a missing file goes to the Hub
  server, whose 404 carries the Hub's error code that HF ``datasets`` looks for), so
  ``HfFileSystem``, HF ``datasets`` and LitData's ``hf://`` route read the bytes from
  nginx, as the real Hub hands its files to a CDN;
- any other path is the plain file under the root (``/datasets/ORG/NAME/PATH``): named
  HTTPS URLs, and path-style S3 GETs and HEADs (bucket ``datasets``) for pyarrow's own
  ``S3FileSystem``.

``HF_ENDPOINT`` is ``https://127.0.0.1:PORT``; clients trust the bench's CA through
``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE`` and ``AWS_CA_BUNDLE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "in_place"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from hub_server import SHA, HubServer
from nginx_server import _free_port, _pacing, find_nginx

_CONFIG = """
daemon off;
master_process on;
{user}
worker_processes 2;
pid {state}/nginx.pid;
error_log {state}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    keepalive_timeout 60s;
    client_body_temp_path {state}/body;
    proxy_temp_path {state}/proxy;
    fastcgi_temp_path {state}/fastcgi;
    uwsgi_temp_path {state}/uwsgi;
    scgi_temp_path {state}/scgi;
    log_format sent '$body_bytes_sent $request_method $uri';
    access_log {state}/access.log sent;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {chain};
        ssl_certificate_key {key};
        root {root};
        {limit}
        location /api/ {{
            proxy_pass http://127.0.0.1:{hub_port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
        location ~ ^/datasets/([^/]+)/([^/]+)/resolve/[^/]+/(.+)$ {{
            try_files /datasets/$1/$2/$3 @hub;
            add_header X-Repo-Commit {sha} always;
        }}
        location @hub {{
            proxy_pass http://127.0.0.1:{hub_port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class HubFront:
    """The Hub server behind nginx over HTTPS, serving ``root`` (``ROOT/datasets/ORG/NAME``);
    a context manager. ``limit_rate`` like ``"40m"`` caps each connection."""

    def __init__(self, root: Path, chain: Path, key: Path, limit_rate: str | None) -> None:
        binary = find_nginx()
        if binary is None:
            raise FileNotFoundError("nginx is not installed (apt-get install -y nginx)")
        self.root, self._binary = root, binary
        self._hub = HubServer(root)
        self.state = tempfile.mkdtemp(prefix="streamx-hub-front-")
        self.port = _free_port()
        hub_port = self._hub.endpoint.rsplit(":", 1)[1]
        self._config = os.path.join(self.state, "nginx.conf")
        Path(self._config).write_text(
            _CONFIG.format(
                user="user root;" if os.geteuid() == 0 else "",
                state=self.state,
                port=self.port,
                chain=chain,
                key=key,
                root=root,
                limit=_pacing(limit_rate) if limit_rate else "",
                hub_port=hub_port,
                sha=SHA,
            )
        )
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> HubFront:
        self._hub.__enter__()
        command = [self._binary, "-c", self._config, "-p", self.state]
        self._process = subprocess.Popen(command, stderr=subprocess.PIPE)
        import socket
        import time

        for _ in range(500):
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"nginx exited at start: {err}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("nginx did not start listening within 5 s")

    def bytes_sent(self) -> int:
        """Body bytes nginx has sent so far (files and API answers alike)."""
        path = Path(self.state) / "access.log"
        if not path.exists():
            return 0
        return sum(int(line.split(" ", 1)[0]) for line in path.read_text().splitlines())

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(10)
        if self._process is not None and self._process.stderr is not None:
            self._process.stderr.close()
        self._hub.__exit__()
        shutil.rmtree(self.state, ignore_errors=True)
