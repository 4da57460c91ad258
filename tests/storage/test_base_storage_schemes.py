"""Every per-scheme name of ``streamx.base.storage``: mosaic's legacy ``download_from_*``
functions, the downloader classes and the uploader classes. Each keeps its signature, checks
its scheme with mosaic's message and transfers through streamx (moto's S3 server and the GCS
emulator on loopback where a store is needed)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from s3_bucket import S3

from streamx.base.storage import download, upload
from streamx.storage.filesystems import get_filesystem

pytestmark = pytest.mark.remote

# Function name suffix -> the scheme it accepts.
LEGACY = {
    "s3": "s3",
    "sftp": "sftp",
    "gcs": "gs",
    "oci": "oci",
    "hf": "hf",
    "azure": "azure",
    "azure_datalake": "azure-dl",
    "dbfs": "dbfs",
    "alipan": "alipan",
    "databricks_unity_catalog": "dbfs",
}
# Downloader class -> the scheme CloudDownloader.get picks it for (and a URL of it).
DOWNLOADERS = {
    "S3Downloader": ("s3", "s3://b/k"),
    "SFTPDownloader": ("sftp", "sftp://host/k"),
    "GCSDownloader": ("gs", "gs://b/k"),
    "OCIDownloader": ("oci", "oci://b/k"),
    "HFDownloader": ("hf", "hf://datasets/o/n/k"),
    "AzureDownloader": ("azure", "azure://c/k"),
    "AzureDataLakeDownloader": ("azure-dl", "azure-dl://c/k"),
    "DatabricksUnityCatalogDownloader": ("dbfs-uc", "dbfs:/Volumes/c/k"),
    "DBFSDownloader": ("dbfs", "dbfs:/k"),
    "AlipanDownloader": ("alipan", "alipan://k"),
    "LocalDownloader": ("", "/some/local/file"),
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_function_checks_its_scheme(name: str, tmp_path: Path) -> None:
    func = getattr(download, f"download_from_{name}")
    assert func.__name__ == f"download_from_{name}"
    params = list(inspect.signature(func).parameters)
    assert params == (["remote", "local", "timeout"] if name == "s3" else ["remote", "local"])
    assert func.__doc__ and "Raises:" in func.__doc__
    scheme = LEGACY[name]
    other = "gs" if scheme != "gs" else "s3"
    args = (f"{other}://b/k", str(tmp_path / "x"), *([5.0] if name == "s3" else []))
    message = f"Expected obj.scheme to be `{scheme}`, instead, got {other} for remote={args[0]}"
    with pytest.raises(ValueError, match=f"^{message}$"):
        func(*args)
    assert not (tmp_path / "x").exists()


# dbfs: is read through the Databricks SDK: tests/databricks downloads with
# download_from_dbfs and download_from_databricks_unity_catalog from a stand-in workspace.
@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("sftp", "sftp://127.0.0.1:1/k"),
        ("alipan", "alipan://k"),
    ],
)
def test_legacy_function_names_a_scheme_streamx_cannot_read(
    name: str, url: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="Unsupported remote path"):
        getattr(download, f"download_from_{name}")(url, str(tmp_path / "x"))


def test_legacy_s3_downloads_and_reports_a_missing_object(s3: S3, tmp_path: Path) -> None:
    s3.put("d/obj.bin", b"payload" * 50)
    download.download_from_s3(s3.url("d/obj.bin"), str(tmp_path / "obj.bin"), 30)
    assert (tmp_path / "obj.bin").read_bytes() == b"payload" * 50
    with pytest.raises(FileNotFoundError, match=r"not found! Either check the bucket path"):
        download.download_from_s3(s3.url("d/missing"), str(tmp_path / "missing"), 30)


def test_legacy_gcs_downloads(gcs_emulator: str, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://bucket-l/x")
    fs.mkdir("bucket-l")
    fs.pipe("bucket-l/d/obj.bin", b"gcs bytes")
    download.download_from_gcs("gs://bucket-l/d/obj.bin", str(tmp_path / "obj.bin"))
    assert (tmp_path / "obj.bin").read_bytes() == b"gcs bytes"
    with pytest.raises(FileNotFoundError, match=r"^Object gs://bucket-l/d/none not found\.$"):
        download.download_from_gcs("gs://bucket-l/d/none", str(tmp_path / "none"))


@pytest.mark.parametrize("cls_name", sorted(DOWNLOADERS))
def test_each_downloader_serves_its_scheme(cls_name: str, tmp_path: Path) -> None:
    scheme, url = DOWNLOADERS[cls_name]
    cls = getattr(download, cls_name)
    assert cls._client_identifier() == scheme
    assert type(download.CloudDownloader.get(url)) is cls
    assert cls.__doc__
    if scheme:  # the local downloader takes any path
        # mosaic's Unity Catalog downloader checks the path's prefix, not its scheme.
        expected = (
            "Expected path prefix to be `dbfs:/Volumes`"
            if scheme == "dbfs-uc"
            else "Expected remote path to start with url scheme"
        )
        with pytest.raises(ValueError, match=expected):
            cls().download("ftp://elsewhere/k", str(tmp_path / "x"))


def test_a_mosaic_style_downloader_subclass_still_registers(tmp_path: Path) -> None:
    class MemDownloader(download.CloudDownloader):
        @staticmethod
        def _client_identifier() -> str:
            return "mem"

    assert type(download.CloudDownloader.get("mem://x")) is MemDownloader
    with pytest.raises(ValueError, match="Expected remote path"):
        MemDownloader().download("s3://b/k", str(tmp_path / "x"))


def test_the_s3_downloader_downloads(s3: S3, tmp_path: Path) -> None:
    s3.put("d/obj.bin", b"abc")
    download.S3Downloader().download(s3.url("d/obj.bin"), str(tmp_path / "a" / "obj.bin"))
    assert (tmp_path / "a" / "obj.bin").read_bytes() == b"abc"


# The dbfs: uploaders (DatabricksUnityCatalogUploader, DBFSUploader) upload through the
# Databricks SDK: tests/databricks/test_mosaic_names.py uploads with them.
@pytest.mark.parametrize(
    ("remote", "cls_name"),
    [
        ("alipan://ds", "AlipanUploader"),
    ],
)
def test_uploaders_without_a_client_refuse_at_construction(
    remote: str, cls_name: str, tmp_path: Path
) -> None:
    assert upload.UPLOADERS[next(p for p in upload.UPLOADERS if remote.startswith(p))] == cls_name
    cls = getattr(upload, cls_name)
    for make in (upload.CloudUploader.get, cls):
        with pytest.raises(ValueError, match=f"Unsupported remote path: {remote}"):
            make((str(tmp_path / "l"), remote))


def test_uploader_signatures_are_the_base_ones() -> None:
    base = inspect.signature(upload.CloudUploader.__init__)
    for name in upload.__all__:
        cls = getattr(upload, name)
        assert inspect.signature(cls.__init__) == base, name


def test_the_gcs_uploader_checks_its_bucket_and_uploads(gcs_emulator: str, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://bucket-u/x")
    fs.mkdir("bucket-u")
    with pytest.raises(FileNotFoundError, match="Either bucket `bucket-none` does not exist!"):
        upload.CloudUploader.get((str(tmp_path / "a"), "gs://bucket-none/ds"))
    up = upload.CloudUploader.get((str(tmp_path / "b"), "gs://bucket-u/ds"))
    assert type(up) is upload.GCSUploader
    up.check_bucket_exists("gs://bucket-u/ds")
    (tmp_path / "b" / "index.json").write_bytes(b"{}")
    up.upload_file("index.json")
    assert fs.cat("bucket-u/ds/index.json") == b"{}"
    assert up.list_objects() == ["ds/index.json"]
    assert not (tmp_path / "b" / "index.json").exists()


def test_the_s3_uploader_checks_its_bucket(s3: S3, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="Either bucket `no-such-bucket-x` does not"):
        upload.S3Uploader((str(tmp_path / "a"), "s3://no-such-bucket-x/ds"))
    up = upload.S3Uploader((str(tmp_path / "b"), s3.url("ds")), keep_local=True)
    (tmp_path / "b" / "f.bin").write_bytes(b"xyz")
    up.upload_file("f.bin")
    assert s3.get("ds/f.bin") == b"xyz"
    assert (tmp_path / "b" / "f.bin").exists()


def test_the_local_uploader_makes_its_remote_directory(tmp_path: Path) -> None:
    remote = tmp_path / "r" / "sub"
    up = upload.LocalUploader((str(tmp_path / "l"), str(remote)))
    assert remote.is_dir()
    (tmp_path / "l" / "f.txt").write_text("hi")
    up.upload_file("f.txt")
    assert (remote / "f.txt").read_text() == "hi"
    assert up.list_objects() == []  # the local file went away after its upload
