"""streamx's own signed S3 ``HEAD`` (an object's size and ``ETag`` without s3fs): a server
that verifies every signature accepts it, and refusals name the URL and the status."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_s3_direct
from test_s3_direct import _env, _no_aws_files

from streamx.storage.http_head import head_object
from streamx.storage.s3_direct import route_for

verifying_s3 = test_s3_direct.verifying_s3  # a moto server that checks every signature


def test_a_verifying_server_accepts_the_signed_head(
    verifying_s3: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endpoint, access, secret = verifying_s3
    _no_aws_files(monkeypatch, tmp_path)
    _env(monkeypatch, endpoint, access, secret)
    for name in ("plain.bin", "dir/with space.bin"):
        route = route_for("signed", name)
        assert route is not None
        size, etag = head_object(route, timeout=10)
        assert size == len(name) * 1000 and etag is not None and etag.startswith('"')
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    route = route_for("signed", "plain.bin")
    assert route is not None
    with pytest.raises(PermissionError, match=r"HEAD s3://signed/plain.bin: HTTP 403 Forbidden"):
        head_object(route, timeout=10)
