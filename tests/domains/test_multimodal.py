"""streamx.multimodal against mosaicml-streaming's streaming.multimodal, sample by sample."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from domain_data import NUM_SAMPLES, assert_same_samples, sample_for, video_bytes

pytestmark = pytest.mark.compat

import streaming.multimodal  # noqa: E402

import streamx  # noqa: E402
import streamx.multimodal  # noqa: E402

WRITERS = ["streamx", "mosaic"]
OUTSIDE = ["StreamingOutsideGIWebVid", "StreamingOutsideDTWebVid"]


def _videos(root: Path) -> str:
    """The video files the outside layout's ``content_path`` names, under ``root``."""
    for i in range(NUM_SAMPLES):
        path = root / sample_for("webvid_outside", i)["content_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(video_bytes(i))
    return str(root)


@pytest.mark.parametrize("writer", WRITERS)
def test_inside(dataset_dir: Callable[[str, str], str], writer: str) -> None:
    kwargs: dict[str, Any] = {"batch_size": 2, "num_canonical_nodes": 1, "shuffle": True}
    local = dataset_dir("webvid_inside", writer)
    ours = streamx.multimodal.StreamingInsideWebVid(local=local, **kwargs)
    theirs = streaming.multimodal.StreamingInsideWebVid(local=local, **kwargs)
    assert_same_samples(ours, theirs)
    assert ours[3]["content"] == video_bytes(3)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("cls", OUTSIDE)
def test_outside_fetches_videos(
    dataset_dir: Callable[[str, str], str], tmp_path: Path, writer: str, cls: str
) -> None:
    remote = _videos(tmp_path / "videos")
    built = []
    for lib in (streamx.multimodal, streaming.multimodal):
        extra_local = tmp_path / f"cache-{lib.__name__}"
        built.append(
            getattr(lib, cls)(
                local=dataset_dir("webvid_outside", writer),
                extra_local=str(extra_local),
                extra_remote=remote,
                batch_size=2,
                num_canonical_nodes=1,
            )
        )
    ours, theirs = built
    assert_same_samples(ours, theirs)
    assert ours[5]["content"] == video_bytes(5)
    cached = sorted(p.relative_to(tmp_path / "cache-streamx.multimodal") for p in
                    (tmp_path / "cache-streamx.multimodal").rglob("*.mp4"))  # fmt: skip
    assert len(cached) == NUM_SAMPLES


@pytest.mark.parametrize("cls", OUTSIDE)
@pytest.mark.parametrize(
    "extra", [{}, {"extra_local": "unused"}, {"extra_remote": "/nowhere"}], ids=str
)
def test_outside_without_both_extras_returns_samples_as_stored(
    dataset_dir: Callable[[str, str], str], cls: str, extra: dict[str, str]
) -> None:
    local = dataset_dir("webvid_outside", "streamx")
    kwargs: dict[str, Any] = {"batch_size": 2, "num_canonical_nodes": 1, **extra}
    ours = getattr(streamx.multimodal, cls)(local=local, **kwargs)
    theirs = getattr(streaming.multimodal, cls)(local=local, **kwargs)
    assert_same_samples(ours, theirs)
    assert "content" not in ours[0]


@pytest.mark.remote
@pytest.mark.parametrize("cls", OUTSIDE)
def test_outside_from_s3(s3: Any, tmp_path: Path, cls: str) -> None:
    """Shards and videos both on the loopback S3 server, read by both libraries."""
    shards = tmp_path / "shards"
    with streamx.MDSWriter(out=str(shards), columns={"content_path": "str"}) as writer:
        for i in range(NUM_SAMPLES):
            path = sample_for("webvid_outside", i)["content_path"]
            writer.write({"content_path": path})
            s3.put(f"videos/{path}", video_bytes(i))
    for name in os.listdir(shards):
        s3.put(f"shards/{name}", (shards / name).read_bytes())
    built = []
    for lib in (streamx.multimodal, streaming.multimodal):
        built.append(
            getattr(lib, cls)(
                remote=s3.url("shards"),
                local=str(tmp_path / f"local-{lib.__name__}"),
                extra_local=str(tmp_path / f"videos-{lib.__name__}"),
                extra_remote=s3.url("videos"),
                batch_size=2,
                num_canonical_nodes=1,
            )
        )
    ours, theirs = built
    assert_same_samples(ours, theirs)
    assert [ours[i]["content"] for i in range(NUM_SAMPLES)] == [
        video_bytes(i) for i in range(NUM_SAMPLES)
    ]


@pytest.mark.parametrize("cls", OUTSIDE)
def test_unsupported_extra_remote_raises_in_both(
    dataset_dir: Callable[[str, str], str], cls: str
) -> None:
    for lib in (streamx.multimodal, streaming.multimodal):
        with pytest.raises(ValueError, match="Unsupported remote path"):
            getattr(lib, cls)(
                local=dataset_dir("webvid_outside", "streamx"),
                extra_local="/tmp/unused",
                extra_remote="nosuchscheme://bucket/videos",
            )


@pytest.mark.parametrize("cls", OUTSIDE)
def test_missing_video_raises_filenotfound_in_both(
    dataset_dir: Callable[[str, str], str], tmp_path: Path, cls: str
) -> None:
    for lib in (streamx.multimodal, streaming.multimodal):
        ds = getattr(lib, cls)(
            local=dataset_dir("webvid_outside", "streamx"),
            extra_local=str(tmp_path / f"cache-{lib.__name__}"),
            extra_remote=str(tmp_path / "empty"),
        )
        with pytest.raises(FileNotFoundError):
            ds[0]


@pytest.mark.parametrize("content_path", ["../outside.mp4", "/etc/hostname", "a/../../b.mp4"])
def test_content_path_outside_extra_local_is_refused(tmp_path: Path, content_path: str) -> None:
    shards = tmp_path / "shards"
    with streamx.MDSWriter(out=str(shards), columns={"content_path": "str"}) as writer:
        writer.write({"content_path": content_path})
    (tmp_path / "outside.mp4").write_bytes(b"secret")
    ds = streamx.multimodal.StreamingOutsideGIWebVid(
        local=str(shards),
        extra_local=str(tmp_path / "cache"),
        extra_remote=str(tmp_path / "remote"),
    )
    with pytest.raises(ValueError, match=r"Sample 0: content_path .* extra_local"):
        ds[0]
