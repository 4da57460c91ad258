"""The one AWS credentials lookup: its three answers, what each caller makes of a failed
lookup, and its cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from streamx.storage import aws_credentials, filesystems, s3_direct
from streamx.storage.aws_credentials import (
    botocore_chain,
    credentials_found,
    forget_credentials,
    has_credentials,
)


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No keys in the environment, no files, no instance metadata."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    filesystems.clear_cache()
    yield
    filesystems.clear_cache()


def _failing_botocore(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A real failed lookup: the profile the environment names is in no config file, and
    botocore raises ``ProfileNotFound``."""
    config = tmp_path / "aws-config"
    config.write_text("[profile other]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_PROFILE", "missing")


@pytest.mark.usefixtures("no_aws")
def test_no_credentials_anywhere() -> None:
    assert credentials_found() is False
    assert not has_credentials()
    assert s3_direct.route_for("bucket", "key") is None


@pytest.mark.usefixtures("no_aws")
def test_keys_in_the_environment_need_no_botocore(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _failing_botocore(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert credentials_found() is True
    assert has_credentials()


@pytest.mark.usefixtures("no_aws")
def test_a_failed_lookup_is_neither_yes_nor_no(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The 403 message says none were found; s3fs still signs (and reports botocore's
    error); the direct route stays off."""
    _failing_botocore(monkeypatch, tmp_path)
    assert credentials_found() is None
    assert not has_credentials()
    assert not s3_direct.has_credentials()
    assert s3_direct.route_for("bucket", "key") is None
    assert filesystems._s3_plan("bucket", "/key")[0][4] is False  # anon: no


@pytest.mark.usefixtures("no_aws")
def test_the_answer_is_kept_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = botocore.session.get_session

    def counting() -> Any:
        calls.append(1)
        return real()

    monkeypatch.setattr(botocore.session, "get_session", counting)
    credentials_found()
    credentials_found()
    botocore_chain()
    assert len(calls) == 1
    monkeypatch.setenv("AWS_PROFILE", "other")  # a new environment: resolved again
    credentials_found()
    assert len(calls) == 2
    forget_credentials()
    credentials_found()
    assert len(calls) == 3


@pytest.mark.usefixtures("no_aws")
def test_a_forked_process_resolves_its_own_credentials() -> None:
    """The plain answer carries over a fork; botocore's credentials object does not."""
    key = aws_credentials.env_fingerprint()
    parents = replace(botocore_chain(), pid=os.getpid() + 1)  # as a parent process left it
    aws_credentials._CACHE[key] = parents
    assert credentials_found() is False
    assert aws_credentials._CACHE[key] is parents
    own = botocore_chain()
    assert own is not parents and own.pid == os.getpid()
