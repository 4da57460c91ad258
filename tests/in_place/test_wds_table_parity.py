"""A local tar's member table built in the core (``scan_tar_table``: scanned and grouped
with no Python object per member) is byte for byte the one the Python grouping builds,
on every shape of name; where the core leaves a tar to Python (names outside printable
ASCII, a field twice, a sample of many fields) the outcome, error included, is Python's."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import webdataset
from wds_data import add, fields

from streamx.exceptions import CorruptShardError
from streamx.format.remote_files import RemoteFile
from streamx.format.webdataset.index import file_columns, file_table
from streamx.format.webdataset.member_table import decode_table, encode_columns
from streamx.format.webdataset.tar_members import scan_file_table


def _tar(names: list[str], form: int = tarfile.GNU_FORMAT, encoding: str = "utf-8") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=form, encoding=encoding) as tar:
        directory = tarfile.TarInfo("dir")
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)
        for number, name in enumerate(names):
            add(tar, name, f"body {number}".encode() * (number % 3))
    return buf.getvalue()


def _outcome(build: Callable[[], bytes]) -> bytes | str:
    try:
        return build()
    except CorruptShardError as err:
        return f"CorruptShardError: {err}"


def _both(data: bytes, tmp_path: Path) -> tuple[bytes | str, bytes | str, bool]:
    """The core's table, Python's, and whether the core built it (not left to Python)."""
    path = tmp_path / "t.tar"
    path.write_bytes(data)
    file = RemoteFile(str(path), len(data), "v")
    meta = {"url": file.url, "size": file.size, "version": file.version}
    python = _outcome(lambda: encode_columns(file_columns(str(path), file), meta))
    core = _outcome(lambda: file_table(str(path), file))
    built = isinstance(core, bytes) and scan_file_table(str(path), len(data), file.url) is not None
    return core, python, built


_SHAPES = {
    "samples": [f"s-{i:03d}.{ext}" for i in range(20) for ext in fields(i)],
    "cases and dots": ["a.JPG", "a.Seg.PNG", "a.x.y.z", "B.TXT", "b.json", "c.", "c.d"],
    "skipped": [".hidden", "noext", "__meta__", "__key__.txt", "d/__meta__", "x.txt"],
    "directories": ["p/q/a.txt", "p/q/a.cls", "p/r/a.txt", "p/.q/b.txt", "p.q/c.txt"],
    "long names": ["/".join(["d" * 40] * 6) + "/long.json", "k" * 150 + ".cls"],
    "one key twice apart": ["a.txt", "b.txt", "a.txt"],
    "nothing": ["README", "__meta__"],
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
@pytest.mark.parametrize("form", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=str)
def test_the_core_builds_the_python_table(shape: str, form: int, tmp_path: Path) -> None:
    core, python, built = _both(_tar(_SHAPES[shape], form), tmp_path)
    assert isinstance(python, bytes) and core == python and built
    assert len(decode_table(core, 1 << 40)) == len(decode_table(python, 1 << 40))


def test_a_webdataset_tar(tmp_path: Path) -> None:
    path = tmp_path / "w.tar"
    with webdataset.TarWriter(str(path)) as sink:
        for i in range(50):
            sink.write({"__key__": f"dir/s{i:04d}", **fields(i)})
    core, python, built = _both(path.read_bytes(), tmp_path)
    assert isinstance(python, bytes) and core == python and built


@pytest.mark.parametrize(
    ("names", "encoding"),
    [
        (["ünïcode-名前.txt", "ünïcode-名前.CLS"], "utf-8"),
        (["caf\xe9.txt", "l" * 120 + "\xff.bin"], "latin-1"),
        (["tab\there.txt"], "utf-8"),
        (["a.txt", "a.txt"], "utf-8"),  # a field twice: Python's error
        (["a.TXT", "a.txt"], "utf-8"),
        ([f"k.f{i}" for i in range(80)], "utf-8"),  # a sample of many fields
    ],
    ids=["unicode", "latin-1", "control", "twice", "twice by case", "many fields"],
)
def test_other_names_are_left_to_python(names: list[str], encoding: str, tmp_path: Path) -> None:
    data = _tar(names, tarfile.PAX_FORMAT if encoding == "utf-8" else tarfile.GNU_FORMAT, encoding)
    core, python, built = _both(data, tmp_path)
    assert core == python and not built
    if len({n.lower() for n in names}) < len(names):
        assert isinstance(core, str) and "holds 'txt' twice" in core


def test_a_corrupt_tar_is_named_as_the_scan_names_it(tmp_path: Path) -> None:
    data = bytearray(_tar(["a.txt", "b.txt"]))
    data[1024 + 148 : 1024 + 156] = b"zz\0     "  # the second member's checksum
    core, python, _ = _both(bytes(data), tmp_path)
    assert core == python and isinstance(core, str) and "t.tar: the tar header at offset" in core
