"""The iteration metrics scraped over HTTP by a real Prometheus client."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from streamx import MDSWriter, StreamingDataset
from streamx.dataset.metrics_prometheus import register_prometheus
from streamx.runtime.metrics import snapshot


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("streamx_")
    }


def test_scrape_reports_samples_read(tmp_path: Path) -> None:
    with MDSWriter(out=str(tmp_path / "ds"), columns={"id": "int"}) as writer:
        for i in range(300):
            writer.write({"id": i})
    registry = CollectorRegistry()
    collector = register_prometheus(registry)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        before = _scrape(url)["streamx_samples_total"]
        assert sum(1 for _ in StreamingDataset(local=str(tmp_path / "ds"), batch_size=10)) == 300
        after = _scrape(url)
        assert after["streamx_samples_total"] == before + 300 == snapshot()["samples"]
        assert after["streamx_downloaded_bytes_total"] == snapshot()["bytes_downloaded"]
        assert "streamx_download_queue" in after and "streamx_stall_seconds_total" in after
        registry.unregister(collector)
        assert "streamx_samples_total" not in _scrape(url)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
