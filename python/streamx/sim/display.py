"""A run's summary as people read it: every figure with its unit, one format for CLI, UI and report.

The JSON summary keeps exact numbers (seconds, bytes, samples); :data:`UNITS` names the
unit of each of its keys, and :func:`display_summary` renders them for people.
"""

from __future__ import annotations

from streamx.sim.result import Summary
from streamx.sim.units import fmt_bytes, fmt_seconds

__all__ = ["UNITS", "display_summary", "fmt_dollars", "summary_line"]

# The unit of each summary key, as printed in the JSON output's "units" and in the docs.
UNITS: dict[str, str] = {
    "steps": "global batches",
    "samples": "samples",
    "total_time": "s",
    "samples_per_s": "samples/s",
    "bytes_downloaded": "B (bytes, all nodes)",
    "time_to_first_batch": "s",
    "warmup_time": "s",
    "warmup_step": "global batches",
    "slowed_steps": "global batches",
    "slowed_steps_after_warmup": "global batches",
    "stall_time": "s",
    "min_cache_limit": "B (bytes, per node)",
    "requests": "requests (GET, ranged GET, HEAD; all nodes)",
    "throttled_requests": "requests (503/429 answers asked again; not billed)",
    "requests_per_gb": "requests per 10^9 bytes downloaded",
    "requests_per_epoch": "requests (the run's over its epochs)",
    "price_per_1000": "$ per 1,000 requests",
    "request_cost": "$ (the whole run)",
    "request_cost_per_epoch": "$ per epoch (the run's cost over its epochs)",
    "simulate_seconds": "s",
}

_SIZES = ("bytes_downloaded", "min_cache_limit")
_TIMES = ("total_time", "time_to_first_batch", "warmup_time", "stall_time", "simulate_seconds")


def display_summary(summary: Summary) -> dict[str, str]:
    """Each figure of ``summary`` as text with its unit (binary sizes chosen by magnitude).

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, simulate, synth_shards
        >>> cfg = SimConfig((SimStream(synth_shards(800, 100, 2**20)),), devices=1, workers=1,
        ...                 batch_size=8)
        >>> display_summary(simulate(cfg).summary())["bytes_downloaded"]
        '8.00 MiB'
    """
    out: dict[str, str] = {}
    for key, value in summary.items():
        if key == "name":
            out[key] = str(value)
        elif key in _SIZES:
            out[key] = fmt_bytes(float(value))  # type: ignore[arg-type]
        elif key in _TIMES:
            out[key] = fmt_seconds(float(value))  # type: ignore[arg-type]
        elif key == "requests_per_gb":
            out[key] = f"{float(value):,.1f} per 10^9 B"  # type: ignore[arg-type]
        elif key in ("price_per_1000", "request_cost", "request_cost_per_epoch"):
            out[key] = fmt_dollars(float(value))  # type: ignore[arg-type]
        elif key == "requests_per_epoch":
            out[key] = f"{float(value):,.0f}"  # type: ignore[arg-type]
        elif key == "samples_per_s":
            out[key] = f"{float(value):,.1f} samples/s"  # type: ignore[arg-type]
        else:
            out[key] = f"{int(value):,}"  # type: ignore[call-overload]
    return out


def fmt_dollars(value: float) -> str:
    """Dollars: cents for a dollar or more, three significant digits below.

    Examples:
        >>> fmt_dollars(1234.5), fmt_dollars(0.0004), fmt_dollars(0.0123456), fmt_dollars(0)
        ('$1,234.50', '$0.0004', '$0.0123', '$0')
    """
    return f"${value:,.2f}" if value >= 1 else f"${value:.3g}"


def summary_line(summary: Summary) -> str:
    """One line for the terminal."""
    d = display_summary(summary)
    return (
        f"{d['name'] or 'run'}: {d['steps']} steps in {d['total_time']} "
        f"({d['samples_per_s']}), {d['bytes_downloaded']} downloaded, first batch "
        f"{d['time_to_first_batch']}, warm-up {d['warmup_time']} ({d['warmup_step']} steps), "
        f"{d['slowed_steps']} steps slowed by downloads, cache needed {d['min_cache_limit']}, "
        f"{d['requests']} requests ({d['requests_per_gb']}), {d['request_cost_per_epoch']} per "
        f"epoch at {d['price_per_1000']} per 1,000"
    )
