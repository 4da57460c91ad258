"""PNG plots and a self-contained HTML report of one or more simulated runs."""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Sequence

from streamx.runtime.atomic_write import write_atomic
from streamx.sim.display import display_summary
from streamx.sim.result import SimResult, rolling_throughput

__all__ = ["plot_runs", "write_report"]

_PLOTS = ("throughput", "downloads", "stall")


def _figure(kind: str, results: Sequence[SimResult]) -> bytes:
    """One plot as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # the [simulator] extra; only needed for plots

    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    for i, r in enumerate(results):
        label = r.config.name or f"run {i + 1}"
        steps = range(1, len(r.step_times) + 1)
        if kind == "throughput":
            ax.plot(steps, rolling_throughput(r.step_times) * r.global_batch, label=label)
            ax.set_ylabel("samples/s (10-step mean)")
        elif kind == "downloads":
            ax.plot(steps, r.step_bytes.cumsum() / 2**30, label=label)
            ax.set_ylabel("downloaded, all nodes (GiB)")
        else:
            ax.plot(steps, r.node_stall.max(axis=1), label=label)
            ax.set_ylabel("wait for shards (s/step)")
    ax.set_xlabel("step (global batch)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def plot_runs(results: Sequence[SimResult], out_dir: str) -> list[str]:
    """Writes ``sim-throughput.png``, ``sim-downloads.png`` and ``sim-stall.png``.

    Args:
        results: The runs to draw on the same axes.
        out_dir: Directory for the files (created if missing).

    Returns:
        The paths written.
    """
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for kind in _PLOTS:
        path = os.path.join(out_dir, f"sim-{kind}.png")
        write_atomic(path, _figure(kind, results))
        paths.append(path)
    return paths


def _table(results: Sequence[SimResult]) -> str:
    rows = [display_summary(r.summary()) for r in results]
    keys = [k for k in rows[0] if k != "name"]
    head = "".join(
        f"<th>{html.escape(r['name'] or f'run {i + 1}')}</th>" for i, r in enumerate(rows)
    )
    body = "".join(
        f"<tr><td>{k}</td>" + "".join(f"<td>{html.escape(r[k])}</td>" for r in rows) + "</tr>"
        for k in keys
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def write_report(
    results: Sequence[SimResult], path: str, extra: dict[str, object] | None = None
) -> str:
    """Writes one HTML file with the summary table and the plots inlined (no other files).

    Args:
        results: The runs, compared side by side.
        path: The HTML file to write.
        extra: More figures to list (e.g. shuffle quality), as JSON.

    Returns:
        ``path``.
    """
    images = "".join(
        f'<img alt="{kind}" src="data:image/png;base64,'
        f'{base64.b64encode(_figure(kind, results)).decode()}">'
        for kind in _PLOTS
    )
    more = f"<pre>{html.escape(json.dumps(extra, indent=2))}</pre>" if extra else ""
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>streamx simulation</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;"
        "text-align:right}img{display:block;max-width:100%}</style></head><body>"
        f"<h1>streamx simulation</h1>{_table(results)}{more}{images}</body></html>"
    )
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    write_atomic(path, page)
    return path
