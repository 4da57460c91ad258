"""One reading of "where data lives" for every entry point: the writers, ``convert``'s
destination, ``merge_index``, ``streamx cp`` and the datasets read a URL form the same way,
and ``file://`` is the local path it names (issues 22 and 27)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_run import run_cli

from streamx import CSVWriter, JSONWriter, MDSWriter, StreamingDataset
from streamx.cli.location import is_remote, local_path
from streamx.convert.destination import Destination
from streamx.format.writers.output import split_out
from streamx.location import Location, parse_out
from streamx.storage import filesystems
from streamx.storage import upload as upload_mod
from streamx.storage.merge_index import merge_index

HOME = os.path.expanduser("~")

# form -> (remote URL or None, local path or None); relative paths stay relative.
FORMS: list[tuple[str, str | None, str | None]] = [
    ("s3://bucket/ds", "s3://bucket/ds", None),
    ("gs://bucket/ds", "gs://bucket/ds", None),
    ("az://container/ds", "az://container/ds", None),
    ("hf://datasets/org/ds", "hf://datasets/org/ds", None),
    ("https://host/ds", "https://host/ds", None),
    ("file:///abs/ds", None, "/abs/ds"),
    ("file://localhost/abs/ds", None, "/abs/ds"),
    ("file:/abs/ds", None, "/abs/ds"),
    ("/abs/ds", None, "/abs/ds"),
    ("rel/ds", None, "rel/ds"),
    ("~/ds", None, f"{HOME}/ds"),
]


@pytest.mark.parametrize(("form", "remote", "local"), FORMS)
def test_every_entry_point_reads_a_form_the_same_way(
    form: str, remote: str | None, local: str | None
) -> None:
    where = Location.parse(form)
    assert where.is_remote == (remote is not None)
    pair = parse_out(form)
    assert pair.local == local
    assert (pair.remote.url if pair.remote else None) == remote
    # the writers
    assert split_out(form) == (local, remote)
    staged, up_remote, temporary = upload_mod.parse_out(form)
    assert (up_remote, temporary) == (remote, remote is not None)
    if remote is None:
        assert staged == local
    else:
        os.rmdir(staged)  # a fresh, empty staging directory
    # streamx cp / inspect / verify
    assert is_remote(form) == (remote is not None)
    if local is not None:
        assert local_path(form) == local
        # convert writes into the absolute local directory
        assert Destination(form).out == os.path.abspath(local)
        assert not Destination(form).remote
        # the reader's downloads open the same local path
        _, fs_path = filesystems.get_filesystem(form)
        assert fs_path == os.path.abspath(local)
    else:
        assert Destination(form).remote
        assert Destination(form).out == form
        with pytest.raises(ValueError, match=form):
            _ = where.local_path


@pytest.mark.parametrize(
    ("pair", "local", "remote"),
    [
        (("/l", "s3://b/ds"), "/l", "s3://b/ds"),
        (("file:///l", "gs://b/ds"), "/l", "gs://b/ds"),
        (("rel", "file:///r"), "rel", "file:///r"),
        (["/l", "hf://datasets/o/d"], "/l", "hf://datasets/o/d"),
    ],
)
def test_local_remote_pairs(pair: Any, local: str, remote: str) -> None:
    assert split_out(pair) == (local, remote)
    assert upload_mod.parse_out(pair) == (local, remote, False)
    got = parse_out(pair)
    assert (got.local, got.remote.url if got.remote else None) == (local, remote)


def test_malformed_out_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="local part"):
        parse_out(("s3://a/b", "s3://c/d"))
    with pytest.raises(ValueError, match="Invalid `out`"):
        parse_out(("a", "b", "c"))  # type: ignore[arg-type]


def _write(writer: Any, out: str, n: int = 5) -> None:
    columns = {"id": "int", "text": "str"}
    with writer(out=out, columns=columns) as w:
        for i in range(n):
            w.write({"id": i, "text": f"row {i}"})


@pytest.mark.parametrize("writer", [MDSWriter, JSONWriter, CSVWriter])
def test_writers_put_file_urls_at_the_path_they_name(
    writer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    target = tmp_path / "abs" / "dir"
    _write(writer, f"file://{target}")
    assert (target / "index.json").is_file()
    assert os.listdir(cwd) == [], "nothing may land under ./file:"
    # a bare relative path and the same path as a pair's local part
    _write(writer, "rel")
    assert (cwd / "rel" / "index.json").is_file()


def test_file_urls_through_merge_cp_convert_and_the_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    root = tmp_path / "root"
    for part in ("p0", "p1"):
        _write(MDSWriter, f"file://{root / part}", n=3)
    merge_index([f"file://{root / p / 'index.json'}" for p in ("p0", "p1")], f"file://{root}")
    merged = json.loads((root / "index.json").read_text())
    assert [s["raw_data"]["basename"] for s in merged["shards"]] == [
        "p0/shard.00000.mds",
        "p1/shard.00000.mds",
    ]
    os.remove(root / "index.json")
    merge_index(f"file://{root}")  # the root form
    assert json.loads((root / "index.json").read_text()) == merged

    copy = tmp_path / "copy"
    done = run_cli("cp", f"file://{root}", f"file://{copy}")
    assert done.code == 0, done.err
    assert (copy / "index.json").is_file()
    assert (copy / "p1" / "shard.00000.mds").is_file()

    data = StreamingDataset(remote=f"file://{copy}", local=str(tmp_path / "cache"), batch_size=2)
    assert sorted(int(s["id"]) for s in data) == [0, 0, 1, 1, 2, 2]

    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(4)))
    from streamx.convert import convert

    convert(str(src), f"file://{tmp_path / 'conv'}", num_workers=1, progress=False)
    assert (tmp_path / "conv" / "index.json").is_file()
    assert os.listdir(cwd) == [], "nothing may land under ./file:"


@pytest.mark.remote
def test_s3_form_through_every_entry_point(s3: Any, tmp_path: Path) -> None:
    for part in ("p0", "p1"):
        _write(MDSWriter, s3.url(f"ds/{part}"), n=3)
    _write(JSONWriter, s3.url("json"))
    _write(CSVWriter, s3.url("csv"))
    for key in ("json/index.json", "csv/index.json", "ds/p0/index.json"):
        assert json.loads(s3.get(key))["shards"]
    merge_index(s3.url("ds"))
    merged = json.loads(s3.get("ds/index.json"))
    assert [s["raw_data"]["basename"] for s in merged["shards"]] == [
        "p0/shard.00000.mds",
        "p1/shard.00000.mds",
    ]
    done = run_cli("cp", s3.url("ds"), f"file://{tmp_path / 'down'}")
    assert done.code == 0, done.err
    data = StreamingDataset(remote=s3.url("ds"), local=str(tmp_path / "cache"), batch_size=2)
    assert len(list(data)) == 6


@pytest.mark.parametrize(
    ("url", "scheme", "netloc", "key"),
    [
        ("s3://bucket/a/b", "s3", "bucket", "a/b"),
        ("gs://bucket/a", "gs", "bucket", "a"),
        ("az://container/a", "az", "container", "a"),
        ("hf://datasets/org/ds", "hf", "datasets", "org/ds"),
        ("dbfs:/Volumes/x", "dbfs", "", "Volumes/x"),
        ("C:/data", "", "", "C:/data"),
    ],
)
def test_parsed_parts(url: str, scheme: str, netloc: str, key: str) -> None:
    where = Location.parse(url)
    assert (where.scheme, where.netloc, where.key) == (scheme, netloc, key)
    assert filesystems.split_url(url) == (where.scheme, where.netloc, where.path)
    assert str(where) == url


def test_a_file_remote_equal_to_local_is_the_users_own_data(tmp_path: Path) -> None:
    """``remote='file:///d', local='/d'`` is one place, as ``remote='/d'`` is: the cache never
    evicts (deletes) those files."""
    root = tmp_path / "ds"
    with MDSWriter(out=str(root), columns={"x": "int", "b": "bytes"}, size_limit=1 << 12) as w:
        for i in range(60):
            w.write({"x": i, "b": bytes(300)})
    before = sorted(os.listdir(root))
    data = StreamingDataset(
        remote=f"file://{root}", local=str(root), batch_size=1, cache_limit="20kb"
    )
    assert sorted(int(s["x"]) for s in data) == list(range(60))
    assert sorted(os.listdir(root)) == before
