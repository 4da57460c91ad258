"""URL dispatch and per-process filesystem reuse."""

from __future__ import annotations

import multiprocessing
import os
import sys

import pytest
from fsspec.implementations.local import LocalFileSystem

from streamx.storage import filesystems
from streamx.storage.filesystems import get_filesystem


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    filesystems.clear_cache()


def test_local_paths_and_file_urls(tmp_path: os.PathLike[str]) -> None:
    fs, path = get_filesystem(str(tmp_path))
    assert isinstance(fs, LocalFileSystem)
    assert path == str(tmp_path)
    fs2, path2 = get_filesystem(f"file://{tmp_path}/x")
    assert fs2 is fs
    assert path2 == f"{tmp_path}/x"


@pytest.mark.parametrize("url", ["ftp://host/x", "sftp://u@h/x", "alipan:///x", "wat://b/k"])
def test_unknown_scheme(url: str) -> None:
    with pytest.raises(ValueError, match="^Unsupported remote path: "):
        get_filesystem(url)


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("s3://b/k", "s3fs", "s3"),
        ("gs://b/k", "gcsfs", "gcs"),
        ("azure://acct.blob.core.windows.net/c/k", "adlfs", "azure"),
        ("azure-dl://fs/k", "adlfs", "azure"),
        ("oci://bucket@ns/k", "ocifs", "oci"),
        ("hf://datasets/org/repo/k", "huggingface_hub", "hf"),
        ("dbfs:/Volumes/cat/schema/vol/k", "databricks.sdk", "databricks"),
        ("dbfs:/tmp/k", "databricks.sdk", "databricks"),
    ],
)
def test_missing_package_names_the_extra(
    url: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GCS_KEY", raising=False)
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    expected = rf"needs {module}: pip install 'streamx-data\[{extra}\]'"
    with pytest.raises(ImportError, match=expected):
        get_filesystem(url)


def test_s3_reuse_endpoint_and_requester_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("s3fs")
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "paid, other")
    fs_a, path = get_filesystem("s3://free/a/b.mds")
    fs_b, _ = get_filesystem("s3://free2/c")
    fs_paid, _ = get_filesystem("s3://paid/x")
    assert path == "free/a/b.mds"
    assert fs_a is fs_b
    assert fs_paid is not fs_a
    # s3fs keeps the setting as the RequestPayer argument of every request.
    assert fs_paid.req_kw.get("RequestPayer") == "requester"
    assert "RequestPayer" not in fs_a.req_kw
    assert fs_a.client_kwargs.get("endpoint_url", getattr(fs_a, "endpoint_url", None)) == (
        "http://127.0.0.1:1"
    )
    assert not fs_a.anon


def test_s3_without_credentials_goes_unsigned(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    pytest.importorskip("s3fs")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    fs, _ = get_filesystem("s3://public-bucket/x")
    assert fs.anon


def test_other_schemes_map_paths() -> None:
    pytest.importorskip("huggingface_hub")
    fs, path = get_filesystem("hf://datasets/org/repo/dir/index.json")
    assert type(fs).__name__ == "HfFileSystem"
    assert path == "datasets/org/repo/dir/index.json"
    fs, path = get_filesystem("https://127.0.0.1:9/a/b")
    assert type(fs).__name__ == "HTTPFileSystem"
    assert path == "https://127.0.0.1:9/a/b"


def _child_reports(parent_fs_id: int, conn: multiprocessing.connection.Connection) -> None:
    fs, _ = get_filesystem("/tmp")
    again, _ = get_filesystem("/var")
    conn.send((id(fs) != parent_fs_id, fs is again))


def test_a_forked_child_builds_its_own_filesystem() -> None:
    fs, _ = get_filesystem("/tmp")
    ctx = multiprocessing.get_context("fork")
    parent_conn, child_conn = ctx.Pipe()
    proc = ctx.Process(target=_child_reports, args=(id(fs), child_conn))
    proc.start()
    fresh, reused = parent_conn.recv()
    proc.join(30)
    assert proc.exitcode == 0
    assert fresh and reused
