"""A cold shuffled pass fetches the shards of its first chunk at once, not one after the
other: the chunk yields nothing before its last shard is in, and a shuffled chunk touches
many shards (served by nginx with each connection capped, as S3 would)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_server import LogEntry, Nginx
from served_mds import write_served

import streamx
from streamx.dataset.iteration import chunk_samples

pytestmark = pytest.mark.remote

SAMPLES, SAMPLE_BYTES = 2_000, 20_000  # 40 shards of 1 MB: none read by range (< 4 MiB)


LARGE_SAMPLES, LARGE_SAMPLE_BYTES = 400, 100_000  # 8 shards of 5 MB: read by range at first


def _served(
    tmp_path: Path, name: str, samples: int, sample_bytes: int, size_limit: int, shards: int
) -> Path:
    """Writes the dataset `name` and checks it has at least `shards` shards."""
    served = write_served(tmp_path, name, samples, sample_bytes, size_limit)
    assert len(list((served / "bucket" / name).glob("shard.*.mds"))) >= shards
    return served


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


def test_the_first_chunks_shards_download_together(tmp_path: Path) -> None:
    served = _served(tmp_path, "ds", SAMPLES, SAMPLE_BYTES, 1_000_000, 40)
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


def test_a_throttling_hosts_first_chunk_still_downloads_together(tmp_path: Path) -> None:
    """The first shard's range reads meet a 503 (nginx's limit_req refuses requests that
    come too close together), so range reads give way to downloads. The chunk's other
    shards then download side by side, each started as range reads give way, not one at a
    time as the reader reaches each."""
    from streamx.storage import throttle

    served_large = _served(tmp_path, "large", LARGE_SAMPLES, LARGE_SAMPLE_BYTES, 5_000_000, 8)
    throttle.forget_hosts()
    try:
        with Nginx(served_large, limit_rate="8m", limit_req="20r/s") as server:
            ds = streamx.StreamingDataset(
                remote=f"{server.endpoint}/bucket/large",
                local=str(tmp_path / "cache"),
                batch_size=4,
                shuffle=True,
                shuffle_block_size=LARGE_SAMPLES,
            )
            # The index's GET taught this process the pace: a fresh worker meets a calm host.
            throttle.forget_hosts()
            first = next(iter(ds))

            def whole(entries: list[LogEntry]) -> list[LogEntry]:
                return [e for e in entries if e.status in (200, 206) and e.sent > 1 << 20]

            log = server.log_when(lambda e: len(_shard_spans(whole(e))) >= 4)
    finally:
        throttle.forget_hosts()
    assert first["x"] == bytes([first["i"] % 251]) * LARGE_SAMPLE_BYTES
    chunk = chunk_samples(sum(s.raw_data.bytes for s in ds.shards), LARGE_SAMPLES)
    assert chunk >= 8
    assert any(e.status == 503 for e in log)  # the host did throttle
    spans = _shard_spans(whole(log))
    assert _most_at_once(list(spans.values())) >= 3, spans
