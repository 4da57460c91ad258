"""What makes a remote the same remote, and what an index may name, for http remotes served
by nginx: the same bucket through another endpoint keeps its cache, another bucket is still
refused, an index naming the cache's own ``.streamx/`` files is refused naming the index and
the name, and a remote with no server behind it is named in the error."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx

import streamx
from streamx.exceptions import CorruptIndexError
from streamx.format.index import parse_index

pytestmark = pytest.mark.remote


@pytest.fixture
def served(tmp_path: Path) -> Path:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    for name in ("ds", "other"):
        with streamx.MDSWriter(
            out=str(tmp_path / "served" / "bucket" / name), columns={"x": "int"}, size_limit=200
        ) as writer:
            for i in range(40):
                writer.write({"x": i if name == "ds" else -i})
    return tmp_path / "served"


def _samples(remote: str, local: Path) -> list[int]:
    ds = streamx.StreamingDataset(remote=remote, local=str(local), shuffle=False)
    return [int(ds[i]["x"]) for i in range(len(ds))]


def test_the_same_bucket_through_another_endpoint_keeps_its_cache(
    served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with Nginx(served) as first:
        assert _samples(f"{first.endpoint}/bucket/ds", cache) == list(range(40))
    with Nginx(served) as moved:  # another port: the server moved
        assert moved.endpoint != first.endpoint
        assert _samples(f"{moved.endpoint}/bucket/ds/", cache) == list(range(40))
        with pytest.raises(ValueError, match="Reused local directory") as caught:
            _samples(f"{moved.endpoint}/bucket/other", cache)
    assert "bucket/other" in str(caught.value)


@pytest.mark.parametrize("name", [".streamx/ledger", "sub/../.streamx/remote", ".streamx"])
def test_an_index_naming_the_ledger_directory_is_refused(
    name: str, served: Path, tmp_path: Path
) -> None:
    index_path = served / "bucket" / "ds" / "index.json"
    index = json.loads(index_path.read_text())
    index["shards"][1]["raw_data"]["basename"] = name
    index_path.write_text(json.dumps(index))
    with pytest.raises(CorruptIndexError, match="own .streamx/ directory") as caught:
        parse_index(str(served / "bucket"), "ds", str(index_path))
    assert str(index_path) in str(caught.value)
    assert repr(name) in str(caught.value)
    with Nginx(served) as server, pytest.raises(CorruptIndexError) as remote_caught:
        streamx.StreamingDataset(remote=f"{server.endpoint}/bucket/ds", local=str(tmp_path / "c"))
    assert repr(name) in str(remote_caught.value)
    fetched = tmp_path / "c" / "index.json"
    assert f"{fetched} (as fetched from the remote)" in str(remote_caught.value)
    assert not fetched.exists()


def test_an_http_remote_with_no_server_names_the_url(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = f"http://127.0.0.1:{port}/bucket/ds"
    with pytest.raises(OSError) as caught:
        streamx.StreamingDataset(remote=remote, local=str(tmp_path / "cache"), download_retry=1)
    assert f"{remote}/index.json" in str(caught.value)
    assert isinstance(caught.value, ConnectionRefusedError)
