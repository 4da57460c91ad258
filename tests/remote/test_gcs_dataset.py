"""A small dataset written to and streamed from ``gs://`` (gcsfs against gcp-storage-emulator
on loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest
import remote_data

import streamx
from streamx.storage.filesystems import get_filesystem

pytestmark = [pytest.mark.remote, pytest.mark.timeout(120)]


def test_write_and_stream_gs(gcs_emulator: str, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://gcs-ds/x")
    fs.mkdir("gcs-ds")
    remote_data.write("gs://gcs-ds/ds", 80, size_limit=6_000)
    assert fs.exists("gcs-ds/ds/index.json")
    ds = streamx.StreamingDataset(
        remote="gs://gcs-ds/ds", local=str(tmp_path / "cache"), batch_size=4, validate_hash="xxh64"
    )
    assert sorted(remote_data.check(s) for s in ds) == list(range(80))
    # gcs:// (which mosaicml-streaming does not accept) reaches the same objects.
    again = streamx.StreamingDataset(remote="gcs://gcs-ds/ds", local=str(tmp_path / "c2"))
    assert remote_data.check(again[79]) == 79
