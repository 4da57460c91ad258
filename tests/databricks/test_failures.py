"""What a reader of a ``dbfs:`` remote sees when the workspace refuses, lacks a file, or
breaks or stalls mid-answer: a clear error within the timeouts the test sets (1 s a
request, see conftest.py), and no partial file in the local cache."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from test_volumes_round_trip import VOLUME, write
from workspace_server import WorkspaceServer

import streamx
from streamx.exceptions import DownloadTimeoutError
from streamx.storage import filesystems
from streamx.storage.download import download_file


def _cache_files(cache: Path) -> list[str]:
    """Every file under the cache, the run's own bookkeeping (``.streamx``) aside."""
    if not cache.exists():
        return []
    return sorted(
        str(p.relative_to(cache))
        for p in cache.rglob("*")
        if p.is_file() and ".streamx" not in p.relative_to(cache).parts
    )


def test_a_wrong_token_names_the_workspace_and_the_file(
    workspace: WorkspaceServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(f"{VOLUME}/ds", 20)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-wrong")
    filesystems.clear_cache()
    with pytest.raises(PermissionError) as err:
        streamx.StreamingDataset(remote=f"{VOLUME}/ds", local=str(tmp_path / "c"), batch_size=2)
    message = str(err.value)
    assert f"Databricks workspace {workspace.host}" in message
    assert f"{VOLUME}/ds/index.json" in message
    assert workspace.refused > 0
    assert _cache_files(tmp_path / "c") == []


def test_no_credentials_at_all_is_the_sdks_clear_refusal(
    workspace: WorkspaceServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABRICKS_TOKEN")
    filesystems.clear_cache()
    with pytest.raises(ValueError, match="default auth: cannot configure default credentials") as e:
        download_file(f"{VOLUME}/ds/index.json", str(tmp_path / "index.json"))
    assert str(e.value).startswith(f"{VOLUME}/ds/index.json: the Databricks SDK found no")


def test_a_missing_index_is_file_not_found_naming_it(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    url = f"{VOLUME}/nothing-here/index.json"
    with pytest.raises(FileNotFoundError, match=rf"^Object {url} not found\.$"):
        streamx.StreamingDataset(
            remote=f"{VOLUME}/nothing-here", local=str(tmp_path / "c"), batch_size=2
        )
    with pytest.raises(FileNotFoundError, match=rf"^Object {url} not found\.$"):
        download_file(url, str(tmp_path / "index.json"), retry=1)
    assert not (tmp_path / "index.json").exists()


@pytest.mark.parametrize("fault", ["cut", "stall"])
@pytest.mark.usefixtures("short_timeouts")
def test_a_broken_or_stalled_index_fails_and_leaves_nothing(
    workspace: WorkspaceServer, tmp_path: Path, fault: str
) -> None:
    write(f"{VOLUME}/ds", 20)
    workspace.fault = fault
    expected = DownloadTimeoutError if fault == "stall" else OSError
    with pytest.raises(expected, match=f"Databricks workspace {workspace.host}: download"):
        streamx.StreamingDataset(remote=f"{VOLUME}/ds", local=str(tmp_path / "c"), batch_size=2)
    assert _cache_files(tmp_path / "c") == []


@pytest.mark.parametrize("presigned", [False, True], ids=["files-api", "presigned"])
@pytest.mark.parametrize("fault", ["cut", "stall"])
@pytest.mark.usefixtures("short_timeouts")
def test_a_broken_or_stalled_shard_fails_the_epoch_and_leaves_no_part_of_it(
    workspace: WorkspaceServer, tmp_path: Path, fault: str, presigned: bool
) -> None:
    write(f"{VOLUME}/ds", 20)
    workspace.fault, workspace.fault_on, workspace.presigned = fault, "shard.", presigned
    dataset = streamx.StreamingDataset(
        remote=f"{VOLUME}/ds", local=str(tmp_path / "c"), batch_size=2, download_retry=1
    )
    expected = DownloadTimeoutError if fault == "stall" else OSError
    with pytest.raises(expected, match=r"shard\.00000\.mds"):
        list(dataset)
    assert _cache_files(tmp_path / "c") == ["index.json"]


@pytest.mark.usefixtures("short_timeouts")
def test_a_workspace_that_never_answers_fails_within_the_timeouts(
    workspace: WorkspaceServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that takes connections and never says a word, from the SDK's first request
    (its host-metadata probe, made while the client is built) on."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        monkeypatch.setenv("DATABRICKS_HOST", f"http://127.0.0.1:{silent.getsockname()[1]}")
        filesystems.clear_cache()
        with pytest.raises(
            DownloadTimeoutError, match=r"127\.0\.0\.1.*dbfs:/Volumes/main/default/vol/x"
        ):
            download_file(f"{VOLUME}/x", str(tmp_path / "x"), retry=1)
    assert _cache_files(tmp_path) == []


@pytest.mark.usefixtures("short_timeouts")
def test_an_upload_the_workspace_never_answers_fails_the_writer(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    workspace.fault, workspace.fault_on = "stall", "index.json"
    with pytest.raises(TimeoutError, match=rf"{workspace.host}: upload {VOLUME}/ds/index\.json"):
        write(f"{VOLUME}/ds", 20)
    assert not workspace.local("/Volumes/main/default/vol/ds/index.json").exists()
