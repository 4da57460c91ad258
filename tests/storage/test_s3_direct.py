"""streamx's own S3 GETs: signatures equal botocore's, a verifying server accepts them, the
route is chosen only when it is sure, and the main process never needs botocore for them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from s3_bucket import S3

from streamx.storage.download import download_file
from streamx.storage.s3_direct import BotocoreCredentials, forget_credentials, route_for
from streamx.storage.sigv4 import Credentials, quote_key, sign_get

pytestmark = pytest.mark.remote

KEYS = ["simple.bin", "dir/a b.mds", "a+b=c.mds", "ü/ß.json", "~tilde!$&'()*,;:@.bin", "%41"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    ("host", "token", "extra"),
    [
        ("127.0.0.1:9000", None, {}),
        ("b.s3.eu-west-1.amazonaws.com", "session-token", {"x-amz-request-payer": "requester"}),
    ],
)
def test_signature_equals_botocores(
    key: str, host: str, token: str | None, extra: dict[str, str]
) -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    now = datetime(2026, 12, 2, 15, 4, 5, tzinfo=timezone.utc)
    region = "eu-west-1"
    path = "/bucket/" + quote_key(key)
    ours = sign_get(host, path, region, Credentials("AKID", "SECRET", token), extra, now)
    request = AWSRequest(
        method="GET",
        url=f"http://{host}{path}",
        headers={k: v for k, v in ours.items() if k not in ("authorization", "host")},
    )
    request.context["timestamp"] = now.strftime("%Y%m%dT%H%M%SZ")
    auth = S3SigV4Auth(BotoCredentials("AKID", "SECRET", token), "s3", region)
    signature = auth.signature(
        auth.string_to_sign(request, auth.canonical_request(request)), request
    )
    assert ours["authorization"].endswith(f"Signature={signature}")
    assert ours["x-amz-date"] == "20261202T150405Z"
    assert ("x-amz-security-token" in ours) == (token is not None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def verifying_s3() -> Iterator[tuple[str, str, str]]:
    """A moto server of its own that checks every request's signature against an IAM key;
    yields (endpoint, access key, secret)."""
    port = _free_port()
    code = (
        "import time\nfrom moto.server import ThreadedMotoServer\n"
        f"ThreadedMotoServer(ip_address='127.0.0.1', port={port}, verbose=False).start()\n"
        "time.sleep(1e6)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        import boto3

        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        setup = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        setup |= {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", **setup)
        iam.create_user(UserName="reader")
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*",
                  "Resource": "*"}]}  # fmt: skip
        iam.put_user_policy(UserName="reader", PolicyName="s3", PolicyDocument=json.dumps(policy))
        s3 = boto3.client("s3", **setup)
        s3.create_bucket(Bucket="signed")
        # moto rebuilds the signed path from a decoded one, so it rejects even botocore's
        # signatures for keys with '+', '=' or non-ASCII; those are checked against botocore.
        for name in ("plain.bin", "dir/with space.bin"):
            s3.put_object(Bucket="signed", Key=name, Body=name.encode() * 1000)
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth",
            data=b"0",
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(request).read()  # from now on every request is verified
        yield endpoint, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        proc.kill()
        proc.wait()


def _no_aws_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep botocore's chain off this machine's files and instance metadata."""
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    forget_credentials()


def _env(monkeypatch: pytest.MonkeyPatch, endpoint: str, access: str, secret: str) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", access)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("STREAMX_S3_DIRECT", raising=False)


def test_a_verifying_server_accepts_the_signature(
    verifying_s3: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endpoint, access, secret = verifying_s3
    _env(monkeypatch, endpoint, access, secret)
    for name in ("plain.bin", "dir/with space.bin"):
        assert route_for("signed", name) is not None
        download_file(f"s3://signed/{name}", str(tmp_path / "out"), retry=1)
        assert (tmp_path / "out").read_bytes() == name.encode() * 1000
        # Ranged parts: their requests are written by streamx itself, not http.client.
        monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", "4096")
        size = len(name) * 1000
        download_file(f"s3://signed/{name}", str(tmp_path / "parts"), retry=1, expected_size=size)
        assert (tmp_path / "parts").read_bytes() == name.encode() * 1000
        monkeypatch.delenv("STREAMX_DOWNLOAD_PART_SIZE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(PermissionError, match=r"s3://signed/plain.bin: HTTP 403 SignatureDoes"):
        download_file("s3://signed/plain.bin", str(tmp_path / "bad"), retry=1)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", "4096")
    with pytest.raises(PermissionError, match=r"s3://signed/plain.bin: HTTP 403 SignatureDoes"):
        download_file("s3://signed/plain.bin", str(tmp_path / "bad"), retry=1, expected_size=9000)
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("env", "bucket", "expected"),
    [
        ({"S3_ENDPOINT_URL": "http://h:9000"}, "b", ("http", "h", 9000, "/b/k%20x", "us-east-1")),
        (
            {"S3_ENDPOINT_URL": "https://h/base/"},
            "b",
            ("https", "h", None, "/base/b/k%20x", "us-east-1"),
        ),
        (
            {"AWS_ENDPOINT_URL": "http://h:1", "AWS_REGION": "r1"},
            "b",
            ("http", "h", 1, "/b/k%20x", "r1"),
        ),
        (
            {"AWS_DEFAULT_REGION": "eu-west-1"},
            "bkt",
            ("https", "bkt.s3.eu-west-1.amazonaws.com", None, "/k%20x", "eu-west-1"),
        ),
        ({"AWS_DEFAULT_REGION": "eu-west-1"}, "dotted.bucket", None),  # TLS names: botocore's
        ({}, "bkt", None),  # no region: botocore finds it
        ({"S3_ENDPOINT_URL": "http://h:9000", "STREAMX_S3_DIRECT": "0"}, "b", None),
        ({"S3_ENDPOINT_URL": "http://h:9000", "AWS_USE_FIPS_ENDPOINT": "true"}, "b", None),
        ({"S3_ENDPOINT_URL": "http://h:9000", "AWS_SECRET_ACCESS_KEY": ""}, "b", None),
    ],
)
def test_route_is_chosen_only_when_sure(
    env: dict[str, str],
    bucket: str,
    expected: tuple[str, str, int | None, str, str] | None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name in ("S3_ENDPOINT_URL", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "STREAMX_S3_DIRECT", "AWS_USE_FIPS_ENDPOINT"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    _no_aws_files(monkeypatch, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    route = route_for(bucket, "k x")
    got = None if route is None else (route.scheme, route.host, route.port, route.path,
                                      route.region)  # fmt: skip
    assert got == expected


def test_requester_pays_comes_from_mosaics_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://h:9000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "other, paid")
    paid, free = route_for("paid", "k"), route_for("free", "k")
    assert paid is not None and paid.requester_pays
    assert free is not None and not free.requester_pays


def test_the_direct_route_needs_no_botocore(s3: S3, tmp_path: Path) -> None:
    s3.put("ds/index.json", b'{"version": 2, "shards": []}')
    code = (
        "import sys\n"
        "from streamx.storage.download import download_file\n"
        f"download_file({s3.url('ds/index.json')!r}, {str(tmp_path / 'index.json')!r})\n"
        "heavy = ('s3fs', 'botocore', 'aiobotocore', 'boto3')\n"
        "print(','.join(m for m in heavy if m in sys.modules) or 'none')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=os.environ, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "none"
    assert (tmp_path / "index.json").read_bytes() == b'{"version": 2, "shards": []}'


def test_a_closed_idle_connection_is_not_a_failed_attempt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A server that answers once per connection and then hangs up without saying so: the
    second GET finds its pooled connection dead and must ask again at once, not spend one of
    its attempts (here the only one)."""
    import threading

    body = b"payload" * 100
    served: list[int] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while len(served) < 2:
            conn, _ = listener.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                served.append(len(request))
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n"
                conn.sendall(head.encode() + body)  # keep-alive implied, then closed

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    _env(monkeypatch, f"http://127.0.0.1:{port}", "a", "s")
    for name in ("one", "two"):
        download_file(f"s3://bucket-{port}/{name}", str(tmp_path / name), retry=1, timeout=10)
        assert (tmp_path / name).read_bytes() == body
    thread.join(10)
    listener.close()
    assert len(served) == 2


def test_profile_credentials_from_botocores_chain(
    verifying_s3: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No keys in the environment: a named profile in a credentials file, resolved by
    botocore's chain (no client built), signs the GETs; a profile that sets its own
    endpoint is left to botocore."""
    endpoint, access, secret = verifying_s3
    _env(monkeypatch, endpoint, access, secret)
    _no_aws_files(monkeypatch, tmp_path)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    creds = tmp_path / "no-credentials"
    creds.write_text(f"[reader]\naws_access_key_id = {access}\naws_secret_access_key = {secret}\n")
    config = tmp_path / "no-config"
    config.write_text("[profile reader]\nregion = eu-central-1\n")
    monkeypatch.setenv("AWS_PROFILE", "reader")
    route = route_for("signed", "plain.bin")
    assert route is not None and isinstance(route.credentials, BotocoreCredentials)
    assert route.region == "eu-central-1"
    # moto accepts any region in the scope; the signature itself is checked.
    download_file("s3://signed/plain.bin", str(tmp_path / "out"), retry=1)
    assert (tmp_path / "out").read_bytes() == b"plain.bin" * 1000
    config.write_text("[profile reader]\nregion = eu-central-1\nendpoint_url = http://x:1\n")
    forget_credentials()
    assert route_for("signed", "plain.bin") is None
    creds.write_text("")
    config.write_text("")
    forget_credentials()
    assert route_for("signed", "plain.bin") is None  # no credentials at all: s3fs, unsigned
