"""MDS datasets written to a Unity Catalog volume (and to the legacy DBFS root) and
streamed back, through the real Databricks SDK talking HTTP to a stand-in workspace."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest
from workspace_server import WorkspaceServer

import streamx
from streamx.storage.databricks_fs import DatabricksFileSystem
from streamx.storage.download import download_file
from streamx.storage.filesystems import get_filesystem

VOLUME = "dbfs:/Volumes/main/default/vol"


def write(remote: str, n: int) -> None:
    """``n`` samples, a few to a shard, written by streamx's MDSWriter to ``remote``."""
    columns = {"id": "int", "text": "str", "blob": "bytes"}
    with streamx.MDSWriter(out=remote, columns=columns, size_limit=1 << 12) as writer:
        for i in range(n):
            writer.write(sample(i))


def sample(i: int) -> dict[str, object]:
    return {"id": i, "text": f"sample {i}", "blob": bytes([i % 256]) * (i % 97)}


def _read(remote: str, cache: Path) -> list[dict[str, object]]:
    ds = streamx.StreamingDataset(remote=remote, local=str(cache), batch_size=10)
    return sorted(
        ({"id": int(s["id"]), "text": s["text"], "blob": s["blob"]} for s in ds),
        key=lambda s: int(str(s["id"])),
    )


def test_written_to_a_volume_and_streamed_back(workspace: WorkspaceServer, tmp_path: Path) -> None:
    write(f"{VOLUME}/ds", 300)
    stored = sorted(p.name for p in workspace.local("/Volumes/main/default/vol/ds").iterdir())
    assert "index.json" in stored and len(stored) > 3  # several shards
    assert _read(f"{VOLUME}/ds", tmp_path / "cache") == [sample(i) for i in range(300)]
    # Each file went up by a PUT and came down by a GET of the Files API, every request
    # with the token the test set (the server refuses any other).
    files = [(m, p) for m, p in workspace.requests if p.startswith("/api/2.0/fs/files/")]
    assert sum(m == "PUT" for m, _ in files) == len(stored)
    assert sum(m == "GET" for m, _ in files) == len(stored)
    assert workspace.refused == 0


def test_written_to_the_dbfs_root_and_streamed_back(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    write("dbfs:/tmp/ds", 40)
    assert (workspace.local("/tmp/ds") / "index.json").is_file()
    assert _read("dbfs:/tmp/ds", tmp_path / "cache") == [sample(i) for i in range(40)]
    assert any(p.startswith("/api/2.0/dbfs/read") for _, p in workspace.requests)


def test_one_filesystem_per_process_lists_the_volume(workspace: WorkspaceServer) -> None:
    write(f"{VOLUME}/ds", 30)
    fs, path = get_filesystem(f"{VOLUME}/ds/index.json")
    assert isinstance(fs, DatabricksFileSystem)
    assert path == "/Volumes/main/default/vol/ds/index.json"
    assert get_filesystem(f"{VOLUME}/other")[0] is fs
    assert fs.info(path)["size"] == (workspace.local(path)).stat().st_size
    assert fs.info("/Volumes/main/default/vol/ds")["type"] == "directory"
    listed = fs.find("/Volumes/main/default/vol/ds")
    assert sorted(os.path.basename(p) for p in listed) == sorted(
        p.name for p in workspace.local("/Volumes/main/default/vol/ds").iterdir()
    )


def test_streamx_cp_to_a_volume_and_back(workspace: WorkspaceServer, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streamx.cli.app import app

    write(str(tmp_path / "src"), 50)

    def cp(src: str, dst: str) -> None:
        done = CliRunner().invoke(app, ["cp", src, dst, "--json"], catch_exceptions=False)
        assert done.exit_code == 0, done.stderr

    cp(str(tmp_path / "src"), f"{VOLUME}/copy")
    assert (workspace.local("/Volumes/main/default/vol/copy") / "index.json").is_file()
    cp(f"{VOLUME}/copy", str(tmp_path / "back"))
    names = sorted(os.listdir(tmp_path / "src"))
    assert sorted(os.listdir(tmp_path / "back")) == names
    _, mismatch, errors = filecmp.cmpfiles(
        tmp_path / "src", tmp_path / "back", names, shallow=False
    )
    assert (mismatch, errors) == ([], [])


def test_a_file_larger_than_a_download_part_comes_whole(
    workspace: WorkspaceServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files of a known size are fetched in ranged parts elsewhere; the SDK reads files
    whole, so this one falls back to one stream, complete and byte for byte."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(1 << 20))
    data = os.urandom(5 << 20)
    workspace.local("/Volumes/c/s/v/big.bin").parent.mkdir(parents=True)
    workspace.local("/Volumes/c/s/v/big.bin").write_bytes(data)
    out = tmp_path / "out"
    download_file("dbfs:/Volumes/c/s/v/big.bin", str(out / "big.bin"), expected_size=len(data))
    assert (out / "big.bin").read_bytes() == data
    assert os.listdir(out) == ["big.bin"]


@pytest.mark.timeout(300)
def test_dataloader_workers_each_read_through_their_own_client(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    from torch.utils.data import DataLoader

    write(f"{VOLUME}/ds", 100)
    get_filesystem(f"{VOLUME}/ds")  # the parent's client, which forked workers must not use
    ds = streamx.StreamingDataset(remote=f"{VOLUME}/ds", local=str(tmp_path / "c"), batch_size=5)
    loader = DataLoader(ds, batch_size=5, num_workers=2)
    ids = sorted(int(i) for batch in loader for i in batch["id"])
    assert ids == list(range(100))


def test_the_sdk_is_imported_only_when_a_dbfs_url_is_used(workspace: WorkspaceServer) -> None:
    code = """
import sys
import streamx
from streamx.storage import cloud_downloaders, cloud_uploaders
from streamx.storage import filesystems, upload as uploads
print("databricks" in sys.modules)
filesystems.get_filesystem("dbfs:/Volumes/c/s/v/x")
print("databricks.sdk" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_a_workspace_that_hands_out_presigned_urls(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    """The SDK's first choice: the bytes come from the (stand-in) cloud store at the URL the
    workspace hands out, and the workspace's token is not sent there."""
    write(f"{VOLUME}/ds", 60)
    workspace.presigned = True
    assert _read(f"{VOLUME}/ds", tmp_path / "cache") == [sample(i) for i in range(60)]
    shards = len(list(workspace.local("/Volumes/main/default/vol/ds").iterdir()))
    assert workspace.presigned_tokens == [None] * shards
