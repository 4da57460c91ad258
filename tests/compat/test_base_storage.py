"""``streamx.base.storage`` against mosaicml-streaming 0.13.0's ``streaming.base.storage``:
the same names and signatures, the same files uploaded and listed, the same errors (types,
and messages where user code matches on them), on local directories and a moto S3 server."""

from __future__ import annotations

import gc
import inspect
import os
from pathlib import Path
from typing import Any

import pytest

from storage_fixtures import load_storage_fixtures  # tests/, on the path
from streamx.base import storage as ours
from streamx.base.storage import download as our_download
from streamx.base.storage import upload as our_upload

streaming_storage = pytest.importorskip("streaming.base.storage")
from streaming.base.storage import download as their_download  # noqa: E402
from streaming.base.storage import upload as their_upload  # noqa: E402

pytestmark = pytest.mark.compat


_fixtures = load_storage_fixtures()
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3

FILES = {"index.json": b"{}", "shard.00000.mds": b"a" * 1000, "shard.00001.mds": b"b" * 77}


def test_names_and_signatures_match() -> None:
    for theirs_module, ours_module in [
        (streaming_storage, ours),
        (their_upload, our_upload),
        (their_download, our_download),
    ]:
        for name in theirs_module.__all__:
            assert hasattr(ours_module, name), f"{ours_module.__name__} lacks {name}"
    for cls in ("CloudUploader", "S3Uploader", "LocalUploader", "GCSUploader"):
        for method in ("__init__", "upload_file", "list_objects", "clear_local"):
            theirs = inspect.signature(getattr(getattr(their_upload, cls), method))
            mine = inspect.signature(getattr(getattr(our_upload, cls), method))
            assert list(theirs.parameters) == list(mine.parameters), (cls, method)
            assert [p.default for p in theirs.parameters.values()] == [
                p.default for p in mine.parameters.values()
            ]
    get_theirs = inspect.signature(their_upload.CloudUploader.get)
    assert list(get_theirs.parameters) == list(
        inspect.signature(our_upload.CloudUploader.get).parameters
    )
    for name in ("direct_download", "download", "get"):
        theirs = inspect.signature(getattr(their_download.CloudDownloader, name))
        mine = inspect.signature(getattr(our_download.CloudDownloader, name))
        assert list(theirs.parameters) == list(mine.parameters), name


def _write(local: str) -> None:
    for name, blob in FILES.items():
        os.makedirs(os.path.dirname(os.path.join(local, name)), exist_ok=True)
        Path(local, name).write_bytes(blob)


def _run_uploader(module: Any, out: Any, **kwargs: Any) -> Any:
    uploader = module.CloudUploader.get(out, **kwargs)
    _write(uploader.local)
    for name in FILES:
        uploader.upload_file(name)
    return uploader


@pytest.mark.parametrize("keep_local", [False, True])
def test_local_uploaders_agree(tmp_path: Path, keep_local: bool) -> None:
    results = []
    for label, module in (("theirs", their_upload), ("ours", our_upload)):
        local, remote = tmp_path / label / "local", tmp_path / label / "remote"
        up = _run_uploader(module, (str(local), str(remote)), keep_local=keep_local)
        assert type(up).__name__ == "LocalUploader"
        listed = [os.path.relpath(p, local) for p in up.list_objects()]
        shard_listed = [os.path.relpath(p, local) for p in up.list_objects("shard")]
        remote_files = {
            str(p.relative_to(remote)): p.read_bytes() for p in remote.rglob("*") if p.is_file()
        }
        local_files = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
        results.append((listed, shard_listed, remote_files, local_files))
    assert results[0] == results[1]
    assert results[1][2] == FILES


def test_s3_uploaders_agree(s3: Any) -> None:
    listings = []
    for label, module in (("theirs", their_upload), ("ours", our_upload)):
        up = _run_uploader(module, s3.url(f"{label}/ds"), progress_bar=False)
        assert type(up).__name__ == "S3Uploader"
        for name, blob in FILES.items():
            assert s3.get(f"{label}/ds/{name}") == blob
        assert os.listdir(up.local) == []  # uploaded files are removed
        everything = sorted(k.split("/", 1)[1] for k in up.list_objects())
        shards = sorted(k.split("/", 1)[1] for k in up.list_objects("shard"))
        listings.append((everything, shards))
        staging = up.local
        del up
        if label == "ours":  # (mosaic's stays behind in the temp directory, empty)
            gc.collect()
            assert not os.path.exists(staging), "the empty staging directory went with it"
    assert listings[0] == listings[1]
    assert listings[1][0] == sorted(f"ds/{name}" for name in FILES)


def test_a_missing_bucket_fails_at_construction(s3: Any) -> None:
    missing = f"s3://{s3.bucket}-missing/ds"
    with pytest.raises(Exception) as theirs:  # botocore's ClientError
        their_upload.CloudUploader.get(missing)
    assert "404" in str(theirs.value) or "Not Found" in str(theirs.value)
    with pytest.raises(FileNotFoundError, match=f"bucket `{s3.bucket}-missing` does not exist"):
        our_upload.CloudUploader.get(missing)


@pytest.mark.parametrize(
    "out",
    [("a", "b", "c"), "ftp://host/x", ("local", "file:///x")],
)
def test_bad_out_raises_the_same(out: Any, tmp_path: Path) -> None:
    os.chdir(tmp_path)
    with pytest.raises(ValueError) as theirs:
        their_upload.CloudUploader.get(out)
    with pytest.raises(ValueError) as mine:
        our_upload.CloudUploader.get(out)
    assert str(mine.value) == str(theirs.value)


def test_a_non_empty_local_dir_needs_exist_ok(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_bytes(b"x")
    out = (str(tmp_path / "full"), str(tmp_path / "remote"))
    errors = []
    for module in (their_upload, our_upload):
        with pytest.raises(FileExistsError) as err:
            module.CloudUploader.get(out)
        errors.append(str(err.value))
        assert module.CloudUploader.get(out, exist_ok=True).local == out[0]
    assert errors[0] == errors[1]


def test_s3_downloads_agree(s3: Any, tmp_path: Path) -> None:
    s3.put("dl/obj.bin", b"payload" * 100)
    for label, module in (("theirs", their_download), ("ours", our_download)):
        downloader = module.CloudDownloader.get(s3.url("dl"))
        assert type(downloader).__name__ == "S3Downloader"
        dest = tmp_path / label / "obj.bin"
        module.CloudDownloader.direct_download(s3.url("dl/obj.bin"), str(dest))
        assert dest.read_bytes() == b"payload" * 100


def test_a_missing_object_has_mosaics_message(s3: Any, tmp_path: Path) -> None:
    url = s3.url("dl/missing.bin")
    with pytest.raises(Exception) as theirs:  # botocore's ClientError
        their_download.CloudDownloader.direct_download(url, str(tmp_path / "a"))
    with pytest.raises(FileNotFoundError) as mine:
        our_download.CloudDownloader.direct_download(url, str(tmp_path / "b"))
    assert str(mine.value) == str(theirs.value)
    with pytest.raises(FileNotFoundError) as legacy:
        our_download.download_file(url, str(tmp_path / "c"), 60)
    assert str(legacy.value) == str(theirs.value)
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("get", ("ftp://host/x",)),
        ("direct_download", (None, "/nonexistent/streamx/file")),
        ("direct_download", ("", "/nonexistent/streamx/file")),
    ],
)
def test_download_errors_match(call: str, args: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(their_download.CloudDownloader, call)(*args)
    with pytest.raises(ValueError) as mine:
        getattr(our_download.CloudDownloader, call)(*args)
    assert str(mine.value) == str(theirs.value)


def test_a_downloader_refuses_another_scheme(s3: Any, tmp_path: Path) -> None:
    for module in (their_download, our_download):
        with pytest.raises(ValueError, match="Expected remote path to start with url scheme"):
            module.S3Downloader().download("gs://bucket/x", str(tmp_path / "x"))


def test_legacy_functions(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"abc")
    our_download.download_file(str(src), str(tmp_path / "a" / "b.bin"), 60)
    assert (tmp_path / "a" / "b.bin").read_bytes() == b"abc"
    our_download.download_from_local(str(src), str(tmp_path / "c.bin"))
    assert (tmp_path / "c.bin").read_bytes() == b"abc"
    with pytest.raises(ValueError, match="Expected obj.scheme to be `gs`"):
        our_download.download_from_gcs("s3://b/k", str(tmp_path / "d"))
    with pytest.raises(TimeoutError, match="Waited longer than 0.3s"):
        our_download.wait_for_download(str(tmp_path / "never"), 0.3)
    our_download.wait_for_download(str(src), 0.3)
