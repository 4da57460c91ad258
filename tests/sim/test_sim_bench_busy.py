"""``streamx bench``'s busy pass (:mod:`streamx.cli.bench_busy`): the loader reads its warm
cache while the download runs beside it, and the time it lost is charged to the bytes moved.
No timing of this machine is asserted: the arithmetic on given windows, and that the pass
runs the download once (again while its window is short), returns what it measured and
never hides the download's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamx import MDSWriter, StreamingDataset
from streamx.cli.bench_busy import busy_seconds_per_byte, lost_seconds_per_byte


def test_lost_time_is_charged_to_the_bytes_moved() -> None:
    # 1,000 samples at 1,000/s take 1 s alone; in a 2 s window 1 s went to 1 GB downloaded.
    assert lost_seconds_per_byte(2.0, 1000, 1000.0, 10**9) == pytest.approx(1e-9)
    assert lost_seconds_per_byte(1.5, 1000, 1000.0, 2 * 10**9) == pytest.approx(2.5e-10)
    # A busy window that went faster than the quiet one (a passing lull) costs nothing.
    assert lost_seconds_per_byte(0.5, 1000, 1000.0, 10**9) == 0.0


def _dataset(tmp_path: Path) -> StreamingDataset:
    with MDSWriter(out=str(tmp_path / "ds"), columns={"x": "bytes"}, size_limit=1 << 16) as w:
        for i in range(200):
            w.write({"x": bytes([i % 251]) * 1000})
    return StreamingDataset(local=str(tmp_path / "ds"), batch_size=8)


def test_the_pass_runs_the_download_once_beside_the_loader(tmp_path: Path) -> None:
    calls: list[int] = []

    def fetch() -> int:
        calls.append(1)
        # Lasts a while, so the loader reads meanwhile (its batches come from the cache).
        sum(range(2_000_000))
        return 10**6

    lost = busy_seconds_per_byte(_dataset(tmp_path), fetch, 100, 0, 8, min_window=0.0)
    assert calls == [1]
    assert lost >= 0.0


def test_a_short_download_runs_again_until_the_window_is_long_enough(tmp_path: Path) -> None:
    calls: list[int] = []

    def fetch() -> int:
        calls.append(1)
        return 10**6

    busy_seconds_per_byte(_dataset(tmp_path), fetch, 100, 0, 8, min_window=0.05)
    assert len(calls) > 1


def test_the_downloads_error_is_raised_on_the_calling_thread(tmp_path: Path) -> None:
    def fetch() -> int:
        raise OSError("s3://bucket/ds/shard.00000.mds: connection reset")

    with pytest.raises(OSError, match="shard.00000.mds: connection reset"):
        busy_seconds_per_byte(_dataset(tmp_path), fetch, 100, 0, 8)
