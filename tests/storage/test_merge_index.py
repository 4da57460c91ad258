"""merge_index in both call forms, local and on S3, byte-compared with mosaicml-streaming."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from s3_bucket import S3

from streamx.storage.merge_index import merge_index

PARTS = ("part-a", "part-b", "part-c")


def _index(part: str, n: int) -> dict[str, Any]:
    shards = []
    for i in range(n):
        raw = {"basename": f"shard.{i:05}.mds", "bytes": 100 + i, "hashes": {"sha1": "ab" * 20}}
        zipped = {"basename": f"shard.{i:05}.mds.zstd", "bytes": 50 + i, "hashes": {}}
        shards.append(
            {
                "column_encodings": ["int", "str"],
                "column_names": ["id", "text"],
                "column_sizes": [8, None],
                "compression": "zstd" if i % 2 else None,
                "format": "mds",
                "raw_data": raw,
                "samples": 3 + i,
                "size_limit": 1 << 20,
                "version": 2,
                "zip_data": zipped if i % 2 else None,
                "note": part,
            }
        )
    return {"version": 2, "shards": shards}


def _make_root(root: Path) -> None:
    for n, part in enumerate(PARTS):
        (root / part).mkdir(parents=True)
        (root / part / "index.json").write_text(json.dumps(_index(part, n + 1)))


def _oracle() -> Any:
    util = pytest.importorskip("streaming.base.util")
    return util.merge_index


def test_list_form_local_matches_streaming(tmp_path: Path) -> None:
    oracle = _oracle()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _make_root(ours)
    _make_root(theirs)
    merge_index([str(ours / p / "index.json") for p in PARTS], str(ours))
    oracle([str(theirs / p / "index.json") for p in PARTS], str(theirs))
    got = (ours / "index.json").read_bytes()
    assert got == (theirs / "index.json").read_bytes()
    merged = json.loads(got)
    assert merged["shards"][0]["raw_data"]["basename"] == "part-a/shard.00000.mds"
    assert merged["shards"][2]["zip_data"]["basename"] == "part-b/shard.00001.mds.zstd"


def test_root_form_local_matches_streaming(tmp_path: Path) -> None:
    oracle = _oracle()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _make_root(ours)
    _make_root(theirs)
    merge_index(str(ours))
    oracle(str(theirs))
    assert (ours / "index.json").read_bytes() == (theirs / "index.json").read_bytes()
    # Merging again ignores the root's own index.json.
    merge_index(str(ours), keep_local=True)
    assert (ours / "index.json").read_bytes() == (theirs / "index.json").read_bytes()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="Invalid arguments to merge_index"):
        merge_index(3)
    with pytest.raises(FileNotFoundError):
        merge_index(["/nonexistent/p/index.json"], "/tmp/x")


@pytest.mark.remote
def test_remote_forms_match_streaming(s3: S3, tmp_path: Path) -> None:
    oracle = _oracle()
    _make_root(tmp_path / "src")
    for prefix in ("ours", "theirs", "tuple", "list"):
        for part in PARTS:
            s3.put(
                f"{prefix}/{part}/index.json", (tmp_path / "src" / part / "index.json").read_bytes()
            )
    oracle(s3.url("theirs"))
    expected = s3.get("theirs/index.json")
    merge_index(s3.url("ours"))
    assert s3.get("ours/index.json") == expected
    # (local, remote): local copies are used where present, the result is uploaded too.
    local = tmp_path / "local"
    shutil.copytree(tmp_path / "src", local)
    merge_index((str(local), s3.url("tuple")), keep_local=False)
    assert s3.get("tuple/index.json") == expected
    assert not (local / "index.json").exists()
    assert (local / "part-a" / "index.json").exists(), "partition files must never be removed"
    merge_index([s3.url(f"list/{p}/index.json") for p in PARTS], s3.url("list"))
    assert s3.get("list/index.json") == expected


def test_a_remote_only_merge_leaves_no_staging_directory(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The merged index is staged in a directory the user never named; once uploaded it goes,
    even with keep_local (the default), which keeps only files in a directory the user gave."""
    _make_root(tmp_path / "src")
    for part in PARTS:
        s3.put(f"staged/{part}/index.json", (tmp_path / "src" / part / "index.json").read_bytes())
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    merge_index(s3.url("staged"), keep_local=True)
    assert json.loads(s3.get("staged/index.json"))["shards"]
    assert list(scratch.iterdir()) == []
