"""A cold shuffled pass fetches the shards of its first chunk at once, not one after the
other: the chunk yields nothing before its last shard is in, and a shuffled chunk touches
many shards (served by nginx with each connection capped, as S3 would)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_server import LogEntry, Nginx, find_nginx

import streamx
from streamx.dataset.iteration import chunk_samples

pytestmark = pytest.mark.remote

SAMPLES, SAMPLE_BYTES = 2_000, 20_000  # 40 shards of 1 MB: none read by range (< 4 MiB)


@pytest.fixture
def served(tmp_path: Path) -> Path:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    out = tmp_path / "served" / "bucket" / "ds"
    with streamx.MDSWriter(
        out=str(out), columns={"i": "int", "x": "bytes"}, size_limit=1_000_000
    ) as w:
        for i in range(SAMPLES):
            w.write({"i": i, "x": bytes([i % 251]) * SAMPLE_BYTES})
    assert len(list(out.glob("shard.*.mds"))) >= 40
    return tmp_path / "served"


def _shard_spans(entries: list[LogEntry]) -> dict[str, tuple[float, float]]:
    """Per shard file, from the start of its first GET to the end of its last."""
    spans: dict[str, tuple[float, float]] = {}
    for e in entries:
        if e.method == "GET" and e.uri.endswith(".mds"):
            name = e.uri.rsplit("/", 1)[-1]
            start, end = spans.get(name, (e.start, e.end))
            spans[name] = (min(start, e.start), max(end, e.end))
    return spans


def _most_at_once(spans: list[tuple[float, float]], slack: float = 0.003) -> int:
    events = sorted([(s + slack, 1) for s, _ in spans] + [(e - slack, -1) for _, e in spans])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def test_the_first_chunks_shards_download_together(served: Path, tmp_path: Path) -> None:
    with Nginx(served, limit_rate="4m") as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(tmp_path / "cache"),
            batch_size=16,
            shuffle=True,
            shuffle_block_size=SAMPLES,
            predownload=16,
        )
        first = next(iter(ds))
        chunk = chunk_samples(sum(s.raw_data.bytes for s in ds.shards), SAMPLES)
        spans = _shard_spans(server.log_when(lambda e: len(_shard_spans(e)) > 1))
    assert first["x"] == bytes([first["i"] % 251]) * SAMPLE_BYTES
    # The first chunk's samples come from many shards; their downloads ran side by side.
    assert chunk >= 16
    assert len(spans) >= 8, spans
    assert _most_at_once(list(spans.values())) >= 4, spans
