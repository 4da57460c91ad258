"""Uploads to S3 as streamx's own signed PUTs: signatures equal botocore's and a verifying
server accepts them; a writer uploads with neither s3fs nor botocore imported and both
streamx and mosaicml-streaming read the result; an old s3fs is refused when the writer is
built; the progress bar counts bytes and ends exactly at its total."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import test_s3_direct
from s3_bucket import S3
from s3_fault_proxy import FaultConfig, FaultProxy
from test_s3_direct import _env, _no_aws_files

from streamx.storage import s3_put
from streamx.storage.s3fs_check import S3FS_MINIMUM, check_s3fs_version
from streamx.storage.sigv4 import Credentials, quote_key
from streamx.storage.sigv4_request import sign_request
from streamx.storage.upload import Uploader, upload_file

pytestmark = pytest.mark.remote
verifying_s3 = test_s3_direct.verifying_s3  # a moto server that checks every signature


@pytest.mark.parametrize("method", ["PUT", "HEAD"])
@pytest.mark.parametrize("token", [None, "session-token"])
def test_signature_equals_botocores(method: str, token: str | None) -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    now = datetime(2026, 12, 2, 15, 4, 5, tzinfo=timezone.utc)
    host, path = "127.0.0.1:9000", "/bucket/" + quote_key("dir/a b+c.mds")
    headers = {"content-length": "12", "x-amz-checksum-crc32": "AAAAAA==", "x-amz-acl": "private"}
    ours = sign_request(
        method, host, path, "eu-west-1", Credentials("AK", "SK", token), headers, now
    )
    request = AWSRequest(
        method=method,
        url=f"http://{host}{path}",
        headers={k: v for k, v in ours.items() if k not in ("authorization", "host")},
    )
    request.context["timestamp"] = now.strftime("%Y%m%dT%H%M%SZ")
    auth = S3SigV4Auth(BotoCredentials("AK", "SK", token), "s3", "eu-west-1")
    expected = auth.signature(
        auth.string_to_sign(request, auth.canonical_request(request)), request
    )
    assert ours["authorization"].endswith(f"Signature={expected}")
    assert "content-length" in ours["authorization"].split("SignedHeaders=")[1]


def test_a_verifying_server_accepts_the_puts(
    verifying_s3: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endpoint, access, secret = verifying_s3
    _env(monkeypatch, endpoint, access, secret)
    _no_aws_files(monkeypatch, tmp_path)
    blob = os.urandom(3 << 20)
    (tmp_path / "shard.mds").write_bytes(blob)
    upload_file(str(tmp_path / "shard.mds"), "s3://signed/up/with space.mds", retry=1)
    assert s3_put.bucket_exists("signed") is True
    assert s3_put.bucket_exists("no-such-bucket") is False
    import boto3

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access, aws_secret_access_key=secret
    )
    got = client.get_object(Bucket="signed", Key="up/with space.mds", ChecksumMode="ENABLED")
    assert got["Body"].read() == blob
    crc = base64.b64encode(zlib.crc32(blob).to_bytes(4, "big")).decode()
    assert got["ChecksumCRC32"] == crc  # what the PUT sent, verified and stored by the server
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(PermissionError, match=r"PUT s3://signed/up/bad: HTTP 403"):
        upload_file(str(tmp_path / "shard.mds"), "s3://signed/up/bad", retry=1)


def test_route_and_size_cap(s3: S3) -> None:
    assert s3_put.put_route(s3.url("k"), s3_put.MAX_SINGLE_PUT) is not None
    # Over S3's single-PUT limit, s3fs's multipart upload takes the file.
    assert s3_put.put_route(s3.url("k"), s3_put.MAX_SINGLE_PUT + 1) is None
    assert s3_put.put_route("gs://b/k", 1) is None


def test_canned_acl_is_applied(s3: S3, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("S3_CANNED_ACL", "public-read")
    (tmp_path / "f").write_bytes(b"x")
    upload_file(str(tmp_path / "f"), s3.url("acl/f"))
    grants = s3.client.get_object_acl(Bucket=s3.bucket, Key="acl/f")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/global/AllUsers") for g in grants)


_WRITE = """
import sys
for name in ("s3fs", "botocore", "boto3", "aiobotocore"):
    sys.modules[name] = None  # importing any of them now fails
from streamx import MDSWriter
with MDSWriter(out={out!r}, columns={{"id": "int", "data": "bytes"}}, size_limit=1 << 14) as w:
    for i in range({n}):
        w.write({{"id": i, "data": bytes([i % 256]) * (i * 7 % 300)}})
print("written")
"""


def test_writer_uploads_without_s3fs_or_botocore_and_both_libraries_read_it(
    s3: S3, tmp_path: Path
) -> None:
    n = 300
    code = _WRITE.format(out=s3.url("ds"), n=n)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    index = json.loads(s3.get("ds/index.json"))
    assert len(index["shards"]) > 3
    expected = [(i, bytes([i % 256]) * (i * 7 % 300)) for i in range(n)]

    import streamx

    ours = streamx.StreamingDataset(remote=s3.url("ds"), local=str(tmp_path / "o"), batch_size=8)
    assert [(int(s["id"]), s["data"]) for s in ours] == expected
    streaming = pytest.importorskip("streaming")
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    theirs = streaming.StreamingDataset(
        remote=s3.url("ds"), local=str(tmp_path / "t"), batch_size=8
    )
    assert [(int(s["id"]), s["data"]) for s in theirs] == expected


def _old_s3fs(site: Path) -> dict[str, str]:
    """A site directory whose s3fs metadata says 0.4.2, put first on the path."""
    info = site / "s3fs-0.4.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: s3fs\nVersion: 0.4.2\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))


_BUILD = """
from streamx import MDSWriter
try:
    MDSWriter(out={out!r}, columns={{"id": "int"}}).finish()
    print("built")
except ImportError as err:
    print(err)
"""


def test_an_old_s3fs_is_refused_when_the_writer_is_built(
    s3: S3, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    env = _old_s3fs(tmp_path / "site")
    code = _BUILD.format(out=s3.url("old"))
    # s3fs needed (the direct route turned off): a clear error at construction.
    off = dict(env, STREAMX_S3_DIRECT="0")
    out = subprocess.run([sys.executable, "-c", code], env=off, capture_output=True, text=True)
    assert out.stdout.startswith("s3fs 0.4.2 is too old for s3://"), out.stderr
    assert f"s3fs>={S3FS_MINIMUM}" in out.stdout
    # The direct route serves this configuration: the old s3fs is never used.
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "built", out.stderr


@pytest.mark.parametrize(
    ("version", "ok"),
    [("0.4.2", False), ("2022.11.0", False), (S3FS_MINIMUM, True), ("2024.3.1.post1", True)],
)
def test_s3fs_version_check(version: str, ok: bool) -> None:
    if ok:
        check_s3fs_version(version)
    else:
        with pytest.raises(ImportError, match=f"^s3fs {version} is too old"):
            check_s3fs_version(version)


@pytest.mark.parametrize("route", ["direct", "s3fs"])
def test_progress_bar_counts_bytes_and_ends_at_its_total(
    route: str, faulty_s3: S3, fault_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    if route == "s3fs":
        monkeypatch.setenv("STREAMX_S3_DIRECT", "0")
    # Failed attempts and retries must not count twice.
    fault_proxy.config = FaultConfig(
        probability=0.3, kinds=("503", "drop"), methods=("PUT",), seed=3, max_per_key=1
    )
    uploader = Uploader(faulty_s3.url("bar"), retry=3, progress_bar=True, max_workers=3)
    bar: Any = uploader._bar
    sizes = [1000 + 7919 * i for i in range(8)]
    for i, size in enumerate(sizes):
        Path(uploader.local, f"shard.{i:05}.mds").write_bytes(os.urandom(size))
        uploader.upload_file(f"shard.{i:05}.mds")
        assert bar.n <= bar.total
    Path(uploader.local, "index.json").write_bytes(b"{}")
    uploader.finish()
    assert bar.unit == "B"
    assert bar.n == bar.total == sum(sizes) + 2
