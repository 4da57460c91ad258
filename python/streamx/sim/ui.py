"""``streamx simulate --ui``: a local web page to set parameters, run and see the charts.

A stdlib HTTP server on 127.0.0.1: ``GET /`` is the page, ``POST /api/simulate`` takes the
form's fields as JSON and answers the summaries and down-sampled series. Nothing leaves
the machine and no JavaScript library is fetched.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from streamx.sim.build import expand_compare, parse_compare, streams_from
from streamx.sim.config import SimConfig
from streamx.sim.result import SimResult, rolling_throughput
from streamx.sim.run import simulate
from streamx.sim.ui_page import PAGE
from streamx.sizes import bytes_to_int

__all__ = ["SimServer", "serve"]

# Points per series sent to the page: enough for a 760-pixel chart.
_POINTS = 800


def _series(result: SimResult) -> dict[str, list[float]]:
    steps = len(result.step_times)
    pick = np.unique(np.linspace(0, steps - 1, min(steps, _POINTS)).astype(np.int64))
    rate = rolling_throughput(result.step_times) * result.global_batch
    gigabytes = result.step_bytes.cumsum() / 1e9
    return {
        "step": (pick + 1).tolist(),
        "throughput": rate[pick].round(3).tolist(),
        "gigabytes": gigabytes[pick].round(4).tolist(),
    }


def _int(form: dict[str, Any], key: str) -> int | None:
    value = str(form.get(key, "")).strip()
    return int(value) if value else None


def run_form(form: dict[str, Any]) -> dict[str, Any]:
    """Simulates what the page's form asks for.

    Raises:
        ValueError: If a field is missing or malformed.
    """
    streams = streams_from(
        form.get("index") or None,
        None,
        form.get("samples") or None,
        _int(form, "shard_samples") or 4096,
        form.get("shard_bytes") or "64MB",
    )
    cache = str(form.get("cache_limit", "")).strip()
    base = SimConfig(
        streams,
        nodes=_int(form, "nodes") or 1,
        devices=_int(form, "devices") or 1,
        workers=_int(form, "workers") or 1,
        batch_size=_int(form, "batch_size") or 1,
        time_per_sample=float(form.get("time_per_sample") or 0.01),
        bandwidth=float(bytes_to_int(form.get("bandwidth") or "100MB")),
        epochs=_int(form, "epochs") or 1,
        predownload=_int(form, "predownload"),
        cache_limit=bytes_to_int(cache) if cache else None,
        shuffle_algo=form.get("shuffle_algo") or "py1e",
    )
    compare = [c for c in str(form.get("compare", "")).split(";") if c.strip()]
    results = [simulate(c) for c in expand_compare(base, parse_compare(compare))]
    return {"runs": [{"summary": r.summary(), "series": _series(r)} for r in results]}


class _Handler(BaseHTTPRequestHandler):
    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path in ("/", "/index.html"):
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self) -> None:
        if self.path != "/api/simulate":
            self._send(404, b"not found", "text/plain")
            return
        length = min(int(self.headers.get("Content-Length", 0)), 1 << 20)
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


def serve(port: int = 8501) -> None:
    """Serves the UI until interrupted (Ctrl-C)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    print(f"streamx simulator UI on http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
