"""Export the iteration metrics (:mod:`streamx.runtime.metrics`) to Prometheus.

A collector reads :func:`~streamx.runtime.metrics.snapshot` when scraped, so nothing runs
between scrapes and the iteration path is untouched. Needs ``prometheus_client`` (the
``[prometheus]`` extra).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector, CollectorRegistry

from streamx.runtime.metrics import snapshot

__all__ = ["StreamxCollector", "register_prometheus"]


class StreamxCollector(Collector):
    """The node's reading totals as ``streamx_*`` metrics, read at each scrape."""

    def collect(self) -> Iterator[Metric]:
        """Yields the current totals."""
        now = snapshot()
        counters = (
            ("samples", "Samples read", now["samples"]),
            ("stall_seconds", "Seconds readers waited for shards", now["stall_s"]),
            ("cache_hits", "Samples whose shard was local when read", now["cache_hits"]),
            ("cache_misses", "Samples whose shard had to be fetched", now["cache_misses"]),
            ("downloaded_bytes", "Bytes of shards downloaded", now["bytes_downloaded"]),
        )
        for name, doc, value in counters:
            yield CounterMetricFamily(f"streamx_{name}", doc, value=value)
        yield GaugeMetricFamily(
            "streamx_samples_per_second", "Samples per second so far", value=now["samples_per_s"]
        )
        yield GaugeMetricFamily(
            "streamx_download_queue",
            "Shard downloads started, not finished",
            value=now["download_queue"],
        )


def register_prometheus(registry: CollectorRegistry | None = None) -> StreamxCollector:
    """Registers the streamx metrics with ``registry`` (the default one if ``None``).

    Serve them with ``prometheus_client.start_http_server(PORT)`` as any other metric.

    Args:
        registry: Where to register.

    Returns:
        The collector (``registry.unregister(collector)`` removes it).

    Examples:
        >>> from prometheus_client import CollectorRegistry, generate_latest
        >>> registry = CollectorRegistry()
        >>> _ = register_prometheus(registry)
        >>> b"streamx_samples_total" in generate_latest(registry)
        True
    """
    collector = StreamxCollector()
    (registry or REGISTRY).register(collector)
    return collector
