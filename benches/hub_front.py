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
``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE`` and ``AWS_CA_BUNDLE``. The nginx is the tests'
(``tests/storage/nginx_server.py``), with the proxied locations added to its server block.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "in_place"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from hub_server import SHA, HubServer
from nginx_server import Nginx

_LOCATIONS = """
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
"""


class HubFront:
    """The Hub server behind nginx over HTTPS, serving ``root`` (``ROOT/datasets/ORG/NAME``);
    a context manager. ``limit_rate`` like ``"40m"`` caps each connection."""

    def __init__(self, root: Path, chain: Path, key: Path, limit_rate: str | None) -> None:
        self.root, self._tls, self._limit_rate = root, (chain, key), limit_rate
        self._hub = HubServer(root)
        self._nginx: Nginx | None = None

    @property
    def endpoint(self) -> str:
        assert self._nginx is not None, "use HubFront as a context manager"
        return str(self._nginx.endpoint)

    def __enter__(self) -> HubFront:
        self._hub.__enter__()
        hub_port = self._hub.endpoint.rsplit(":", 1)[1]
        try:
            self._nginx = Nginx(
                self.root,
                limit_rate=self._limit_rate,
                tls=self._tls,
                locations=_LOCATIONS.format(hub_port=hub_port, sha=SHA),
            )
        except BaseException:
            self._hub.__exit__()
            raise
        return self

    def bytes_sent(self) -> int:
        """Body bytes nginx has sent so far (files and API answers alike)."""
        return 0 if self._nginx is None else sum(e.sent for e in self._nginx.log())

    def __exit__(self, *exc: object) -> None:
        if self._nginx is not None:
            self._nginx.stop()
        self._hub.__exit__()
