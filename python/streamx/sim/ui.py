"""``streamx simulate --ui``: a local web page to set parameters, run and see the charts.

A stdlib HTTP server on 127.0.0.1: ``GET /`` is the page, ``POST /api/simulate`` takes the
form's fields as JSON and answers the summaries and down-sampled series. Nothing leaves
the machine and no JavaScript library is fetched. Only this server's own page may use it:
a request whose ``Host`` or ``Origin`` is another address is refused (403), and a post
that is not ``application/json`` (which a foreign page could send without asking) too (415).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from streamx.sim.build import COMPARABLE, expand_compare, parse_bool, parse_compare, streams_from
from streamx.sim.config import SimConfig
from streamx.sim.display import UNITS, display_summary
from streamx.sim.result import SimResult, rolling_throughput
from streamx.sim.run import simulate
from streamx.sim.ui_page import PAGE
from streamx.sim.units import parse_count, parse_float, parse_int, parse_size

__all__ = ["DEFAULT_PORT", "SimServer", "serve"]

# Not 8501, Streamlit's default, which users of that tool often have running.
DEFAULT_PORT = 8642

# Points per series sent to the page: enough for a 760-pixel chart.
_POINTS = 800


def _series(result: SimResult) -> dict[str, list[float]]:
    steps = len(result.step_times)
    pick = np.unique(np.linspace(0, steps - 1, min(steps, _POINTS)).astype(np.int64))
    rate = rolling_throughput(result.step_times) * result.global_batch
    gibibytes = result.step_bytes.cumsum() / 2**30
    return {
        "step": (pick + 1).tolist(),
        "throughput": rate[pick].round(3).tolist(),
        "gibibytes": gibibytes[pick].round(6).tolist(),
    }


# The form's fields, with the label the page shows (errors name the field by it).
LABELS = {
    "nodes": "nodes",
    "devices": "devices per node",
    "workers": "workers per device",
    "batch_size": "batch per device",
    "time_per_sample": "seconds per sample",
    "bandwidth": "bandwidth (per node)",
    "samples": "samples (synthetic)",
    "shard_samples": "samples per shard",
    "shard_bytes": "bytes per shard",
    "epochs": "epochs",
    "predownload": "predownload",
    "cache_limit": "cache limit",
    "shuffle": "shuffle",
    "shuffle_algo": "shuffle algo",
}


def _field(form: dict[str, Any], key: str, default: str) -> str:
    value = form.get(key)
    text = "" if value is None else str(value).strip()
    return text or default


def _named(key: str) -> str:
    return f"{LABELS.get(key, key)} ({key})"


def run_form(form: dict[str, Any]) -> dict[str, Any]:
    """Simulates what the page's form asks for.

    Raises:
        ValueError: If a field is malformed (the message names the field).
    """
    if not isinstance(form, dict):
        raise ValueError("the request body must be a JSON object of the form's fields")
    samples = _field(form, "samples", "")
    if samples:
        parse_count(_named("samples"), samples)  # checked here to name the field
    streams = streams_from(
        _field(form, "index", "") or None,
        None,
        samples or None,
        parse_int(_named("shard_samples"), _field(form, "shard_samples", "4096")),
        str(parse_size(_named("shard_bytes"), _field(form, "shard_bytes", "64MiB"))),
    )
    cache = _field(form, "cache_limit", "")
    predownload = _field(form, "predownload", "")
    algo = _field(form, "shuffle_algo", "py1e")
    base = SimConfig(
        streams,
        nodes=parse_int(_named("nodes"), _field(form, "nodes", "1")),
        devices=parse_int(_named("devices"), _field(form, "devices", "1")),
        workers=parse_int(_named("workers"), _field(form, "workers", "1")),
        batch_size=parse_int(_named("batch_size"), _field(form, "batch_size", "1")),
        time_per_sample=parse_float(
            _named("time_per_sample"), _field(form, "time_per_sample", "0.01")
        ),
        bandwidth=float(parse_size(_named("bandwidth"), _field(form, "bandwidth", "100MiB"))),
        epochs=parse_int(_named("epochs"), _field(form, "epochs", "1")),
        predownload=parse_int(_named("predownload"), predownload, minimum=0)
        if predownload
        else None,
        cache_limit=parse_size(_named("cache_limit"), cache, minimum=0) if cache else None,
        shuffle=parse_bool(_named("shuffle"), _field(form, "shuffle", "false")),
        shuffle_algo=COMPARABLE["shuffle_algo"](algo),
    )
    compare = [c for c in str(form.get("compare", "")).split(";") if c.strip()]
    results = [simulate(c) for c in expand_compare(base, parse_compare(compare))]
    return {
        "runs": [
            {
                "summary": r.summary(),
                "display": display_summary(r.summary()),
                "series": _series(r),
            }
            for r in results
        ],
        "units": UNITS,
    }


def _allowed_hosts(port: int) -> set[str]:
    return {f"127.0.0.1:{port}", f"localhost:{port}"}


class _Handler(BaseHTTPRequestHandler):
    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, code: int, why: str) -> None:
        self._send(code, json.dumps({"error": why}).encode(), "application/json")

    def _foreign(self) -> str | None:
        """Why the request does not come from this server's own page (None if it does).

        A page elsewhere in the user's browser may post here, and a DNS-rebound name may
        reach it: both show in the Host and Origin headers.
        """
        address = self.server.server_address
        hosts = _allowed_hosts(int(address[1]) if isinstance(address, tuple) else 0)
        host = self.headers.get("Host", "")
        if host not in hosts:
            return f"Host {host!r} is not this server's address ({sorted(hosts)[0]})"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in hosts}:
            return f"Origin {origin!r} is not this server's page"
        return None

    def do_GET(self) -> None:
        why = self._foreign()
        if why:
            self._refuse(403, why)
        elif self.path in ("/", "/index.html"):
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self) -> None:
        why = self._foreign()
        if why:
            self._refuse(403, why)
            return
        if self.path != "/api/simulate":
            self._send(404, b"not found", "text/plain")
            return
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            self._refuse(415, f"Content-Type must be application/json, got {kind!r}")
            return
        try:
            length = int(self.headers.get("Content-Length", 0))
        except ValueError:
            length = -1
        if not 0 <= length <= 1 << 20:
            self._refuse(413, "the request body must be at most 1 MiB")
            return
        try:
            answer, code = run_form(json.loads(self.rfile.read(length) or b"{}")), 200
        except (ValueError, TypeError, OSError) as err:
            answer, code = {"error": str(err)}, 400
        self._send(code, json.dumps(answer).encode(), "application/json")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the terminal for the URL line


class SimServer:
    """The UI server, started in a background thread (for tests and notebooks).

    Args:
        port: TCP port on 127.0.0.1; 0 picks a free one.

    Examples:
        >>> server = SimServer(0)
        >>> server.url.startswith("http://127.0.0.1:")
        True
        >>> server.close()
    """

    def __init__(self, port: int = 0) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/"

    def close(self) -> None:
        """Stops serving and frees the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def _bind(port: int | None) -> ThreadingHTTPServer:
    """The server on ``port``; on the default port, another free one when it is taken.

    Raises:
        OSError: If an explicitly asked port is taken (the message names it).
    """
    try:
        return ThreadingHTTPServer(("127.0.0.1", DEFAULT_PORT if port is None else port), _Handler)
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            raise
        if port is not None:
            raise OSError(
                err.errno, f"port {port} on 127.0.0.1 is taken; pass another --port, or 0 for any"
            ) from None
    return ThreadingHTTPServer(("127.0.0.1", 0), _Handler)


def _how_to_stop() -> str:
    # A background job of a script starts with SIGINT ignored, and Python then raises no
    # KeyboardInterrupt: name what does stop the server rather than promise Ctrl-C.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return f"SIGINT is ignored here; kill {os.getpid()} stops it"
    return "Ctrl-C stops"


def serve(port: int | None = None) -> None:
    """Serves the UI until interrupted (Ctrl-C; a SIGTERM where SIGINT is ignored).

    Args:
        port: TCP port on 127.0.0.1; ``None`` is :data:`DEFAULT_PORT`, or a free port when
            that one is taken; 0 is any free port.

    Raises:
        OSError: If ``port`` was given and is taken.
    """
    httpd = _bind(port)
    try:  # from here Ctrl-C is the way out, even while the address is still being printed
        bound = httpd.server_address[1]
        if port is None and bound != DEFAULT_PORT:
            print(f"port {DEFAULT_PORT} is taken; using {bound} instead")
        print(f"streamx simulator UI on http://127.0.0.1:{bound}/ ({_how_to_stop()})", flush=True)
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
