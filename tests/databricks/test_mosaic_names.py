"""mosaicml-streaming's Databricks names in streamx (the downloader and uploader classes, the
legacy ``download_from_*`` functions) against the stand-in workspace, and mosaic itself
reading what streamx wrote to a volume and the other way round, through the same server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_volumes_round_trip import VOLUME, sample, write
from workspace_server import WorkspaceServer

import streamx
from streamx.base.storage import download, upload


def _put(workspace: WorkspaceServer, path: str, data: bytes) -> None:
    workspace.local(path).parent.mkdir(parents=True, exist_ok=True)
    workspace.local(path).write_bytes(data)


def test_the_downloader_classes_download_and_report_a_missing_file(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    _put(workspace, "/Volumes/c/s/v/a.bin", b"volume bytes")
    _put(workspace, "/tmp/b.bin", b"dbfs bytes")
    uc = download.CloudDownloader.get("dbfs:/Volumes/c/s/v/a.bin")
    assert type(uc) is download.DatabricksUnityCatalogDownloader
    out = tmp_path / "out"
    uc.download("dbfs:/Volumes/c/s/v/a.bin", str(out / "a.bin"))
    assert (out / "a.bin").read_bytes() == b"volume bytes"
    root = download.CloudDownloader.get("dbfs:/tmp/b.bin")
    assert type(root) is download.DBFSDownloader
    root.download("dbfs:/tmp/b.bin", str(out / "b.bin"))
    assert (out / "b.bin").read_bytes() == b"dbfs bytes"
    for url in ("dbfs:/Volumes/c/s/v/none.bin", "dbfs:/tmp/none.bin"):
        with pytest.raises(FileNotFoundError, match=rf"^Object {url} not found\.$"):
            download.CloudDownloader.direct_download(url, str(out / "none.bin"))
    assert sorted(os.listdir(out)) == ["a.bin", "b.bin"]  # no temporary file left


def test_the_unity_catalog_downloader_wants_a_volume_path(workspace: WorkspaceServer) -> None:
    with pytest.raises(ValueError, match=r"Expected path prefix to be `dbfs:/Volumes`.*dbfs:/tmp"):
        download.DatabricksUnityCatalogDownloader().download("dbfs:/tmp/x", "/tmp/never")


def test_the_legacy_functions_download(workspace: WorkspaceServer, tmp_path: Path) -> None:
    _put(workspace, "/Volumes/c/s/v/a.bin", b"A")
    _put(workspace, "/tmp/b.bin", b"B")
    download.download_from_databricks_unity_catalog(
        "dbfs:/Volumes/c/s/v/a.bin", str(tmp_path / "a")
    )
    download.download_from_dbfs("dbfs:/tmp/b.bin", str(tmp_path / "b"))
    assert (tmp_path / "a").read_bytes() + (tmp_path / "b").read_bytes() == b"AB"
    with pytest.raises(FileNotFoundError, match=r"^Object dbfs:/tmp/none not found\.$"):
        download.download_from_dbfs("dbfs:/tmp/none", str(tmp_path / "n"))
    with pytest.raises(ValueError, match=r"Expected path prefix to be `dbfs:/Volumes`"):
        download.download_from_databricks_unity_catalog("dbfs:/tmp/b.bin", str(tmp_path / "n"))


def test_the_uploader_classes_upload(workspace: WorkspaceServer, tmp_path: Path) -> None:
    volume = upload.CloudUploader.get((str(tmp_path / "l1"), f"{VOLUME}/up"))
    assert type(volume) is upload.DatabricksUnityCatalogUploader
    assert volume.client.config.host == workspace.host  # mosaic's attribute: the SDK client
    (tmp_path / "l1" / "f.bin").write_bytes(b"to the volume")
    volume.upload_file("f.bin")
    assert workspace.local("/Volumes/main/default/vol/up/f.bin").read_bytes() == b"to the volume"
    assert not (tmp_path / "l1" / "f.bin").exists()
    assert volume.list_objects() == ["/Volumes/main/default/vol/up/f.bin"]

    with pytest.raises(FileNotFoundError, match="Databricks File System path /nowhere not found"):
        upload.CloudUploader.get((str(tmp_path / "l2"), "dbfs:/nowhere"))
    workspace.local("/tmp/up").mkdir(parents=True)
    root = upload.DBFSUploader((str(tmp_path / "l3"), "dbfs:/tmp/up"), keep_local=True)
    (tmp_path / "l3" / "g.bin").write_bytes(b"to dbfs" * 200_000)  # a few 1 MiB blocks
    root.upload_file("g.bin")
    assert workspace.local("/tmp/up/g.bin").read_bytes() == b"to dbfs" * 200_000
    assert (tmp_path / "l3" / "g.bin").exists()


def test_mosaic_reads_what_streamx_wrote_and_streamx_what_mosaic_wrote(
    workspace: WorkspaceServer, tmp_path: Path
) -> None:
    import streaming

    write(f"{VOLUME}/by-streamx", 60)
    theirs = streaming.StreamingDataset(
        remote=f"{VOLUME}/by-streamx", local=str(tmp_path / "mosaic-cache"), batch_size=5
    )
    got = sorted((int(s["id"]), s["text"], s["blob"]) for s in theirs)
    assert got == [(i, f"sample {i}", sample(i)["blob"]) for i in range(60)]

    columns = {"id": "int", "text": "str", "blob": "bytes"}
    with streaming.MDSWriter(out=f"{VOLUME}/by-mosaic", columns=columns, size_limit=1 << 12) as w:
        for i in range(60):
            w.write(sample(i))
    ours = streamx.StreamingDataset(
        remote=f"{VOLUME}/by-mosaic", local=str(tmp_path / "streamx-cache"), batch_size=5
    )
    got = sorted((int(s["id"]), s["text"], s["blob"]) for s in ours)
    assert got == [(i, f"sample {i}", sample(i)["blob"]) for i in range(60)]


def test_the_dbfs_uploader_tells_refused_credentials_from_a_missing_folder(
    workspace: WorkspaceServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamx.storage import filesystems

    workspace.local("/tmp/up").mkdir(parents=True)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-wrong")
    filesystems.clear_cache()
    with pytest.raises(PermissionError, match=f"Databricks workspace {workspace.host}"):
        upload.DBFSUploader((str(tmp_path / "l"), "dbfs:/tmp/up"))
