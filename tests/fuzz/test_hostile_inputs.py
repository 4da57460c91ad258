"""Hostile datasets and settings (issue 13): each attack gets a clear Python exception.

Every test runs the attack in a child process, so a Rust abort (SIGABRT), the OOM killer or
a panic shows up as a failed test with the child's exit status, not a dead pytest.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import streamx
from streamx.exceptions import CorruptIndexError

_REPO = Path(__file__).resolve().parents[2]


def _write(out: Path, compression: str | None = None, n: int = 10) -> Path:
    with streamx.MDSWriter(out=str(out), columns={"x": "int"}, compression=compression) as w:
        for i in range(n):
            w.write({"x": i})
    return out


def _edit_index(out: Path, edit: object) -> None:
    index = json.loads((out / "index.json").read_text())
    edit(index)  # type: ignore[operator]
    (out / "index.json").write_text(json.dumps(index))


def _child(code: str, limit_mb: int = 4096) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter under an address-space cap of ``limit_mb``.

    The sizes fed in ask for terabytes, far past any cap. The cap leaves room for what a
    dataset legitimately maps: ``StreamingDataset`` is torch's ``IterableDataset``, and a
    CUDA build of torch alone maps about 3 GiB (under 2 GiB, CI once ran out of address
    space in the metrics map, before any hostile size was read)."""
    env = {**os.environ, "PYTHONPATH": str(_REPO / "python")}
    prelude = (
        "import resource\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit_mb << 20}, {limit_mb << 20}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _assert_raised(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    for needle in needles:
        assert needle in proc.stdout, proc.stdout


def test_huge_sample_count_is_an_index_error(tmp_path: Path) -> None:
    _write(tmp_path)
    _edit_index(tmp_path, lambda ix: ix["shards"][0].update(samples=10**11))
    proc = _child(f"""
        import streamx
        from streamx.exceptions import CorruptIndexError
        try:
            for _ in streamx.StreamingDataset(local={str(tmp_path)!r}, batch_size=1):
                pass
        except CorruptIndexError as err:
            print("raised", err)
    """)
    _assert_raised(proc, "raised", "index.json", "100000000000 samples")


@pytest.mark.parametrize(
    "args",
    [
        # A world whose padding alone overflows u64.
        ("orig", 10, 2**40, 2**40, 1, 1, 2**40),
        # batch_size x world that fits in u64 but not in memory.
        ("orig", 10, 1, 1, 1, 1, 2**40),
        # An absurd canonical node count.
        ("orig", 10, 2**62, 1, 1, 1, 1),
        ("relaxed", 10, 2**62, 1, 1, 1, 1),
    ],
)
def test_absurd_partition_settings_are_value_errors(args: tuple[object, ...]) -> None:
    proc = _child(f"""
        from streamx import _core
        try:
            _core.get_partitions(*{args!r})
        except ValueError as err:
            print("raised", err)
    """)
    _assert_raised(proc, "raised")


def test_absurd_state_dict_is_a_value_error(tmp_path: Path) -> None:
    _write(tmp_path)
    proc = _child(f"""
        import streamx
        ds = streamx.StreamingDataset(local={str(tmp_path)!r}, batch_size=2)
        state = ds.state_dict(0, False)
        state["num_canonical_nodes"] = 2**60
        ds.load_state_dict(state)
        try:
            for _ in ds:
                pass
        except ValueError as err:
            print("raised", err)
    """)
    _assert_raised(proc, "raised")


def test_huge_batch_size_is_a_value_error(tmp_path: Path) -> None:
    _write(tmp_path)
    proc = _child(f"""
        import streamx
        try:
            for _ in streamx.StreamingDataset(local={str(tmp_path)!r}, batch_size=2**62):
                pass
        except ValueError as err:
            print("raised", err)
    """)
    _assert_raised(proc, "raised")


def test_gzip_bomb_stops_at_the_declared_size(tmp_path: Path) -> None:
    """A shard the index declares small but that inflates to 64 MiB: stopped at the bound."""
    _write(tmp_path, compression="gz")
    zip_name = "shard.00000.mds.gz"
    (tmp_path / zip_name).write_bytes(gzip.compress(b"\0" * (64 << 20), 1))
    _edit_index(tmp_path, lambda ix: ix["shards"][0]["zip_data"].update(bytes=1))
    proc = _child(
        f"""
        import streamx
        from streamx.exceptions import CorruptShardError
        try:
            streamx.StreamingDataset(local={str(tmp_path)!r}, batch_size=1)[0]
        except CorruptShardError as err:
            print("raised", err)
        """,
        limit_mb=1024,
    )
    _assert_raised(proc, "raised", zip_name, "more than the")
    # Nothing of the bomb is left behind: no raw shard, no temp file.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json", zip_name]


@pytest.mark.parametrize("codec", ["br", "bz2", "gz", "snappy", "zstd"])
def test_every_decompressor_stops_at_its_bound(tmp_path: Path, codec: str) -> None:
    from streamx import _core
    from streamx.exceptions import CorruptShardError

    packed = tmp_path / f"x.{codec}"
    packed.write_bytes(_core.compress(codec, b"a" * 100_000))
    with pytest.raises(CorruptShardError, match=f"x.{codec}"):
        _core.decompress_file(codec, str(packed), str(tmp_path / "x"), 99_999)
    assert _core.decompress_file(codec, str(packed), str(tmp_path / "x"), 100_000) == 100_000


def test_pil_bomb_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    proc = _child(
        f"""
        import struct
        import streamx
        from PIL import Image
        out = {str(tmp_path)!r}
        with streamx.MDSWriter(out=out, columns={{"img": "pil"}}) as w:
            w.write({{"img": Image.new("RGB", (2, 2))}})
        path = out + "/shard.00000.mds"
        data = bytearray(open(path, "rb").read())
        at = data.index(struct.pack("<III", 2, 2, 3))
        data[at : at + 8] = struct.pack("<II", 100_000, 100_000)
        open(path, "wb").write(data)
        try:
            streamx.StreamingDataset(local=out, batch_size=1)[0]
        except ValueError as err:
            print("raised", err)
        """,
        limit_mb=1024,
    )
    _assert_raised(proc, "raised", "100000x100000")


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda ix: ix["shards"][0]["raw_data"].update(basename="index.json"), "index itself"),
        (lambda ix: ix["shards"].append(ix["shards"][0]), "also shard 0"),
        (lambda ix: ix["shards"][1]["raw_data"].update(basename="shard.00000.mds"), "shard 0"),
        (
            lambda ix: ix["shards"][0].update(
                column_names=["x", "x"], column_encodings=["int"] * 2, column_sizes=[8, 8]
            ),
            "not distinct",
        ),
        (lambda ix: ix["shards"][0]["raw_data"].update(bytes=-3), "Invalid size"),
        (lambda ix: ix["shards"][0]["raw_data"].update(bytes="12"), "Invalid size"),
        (lambda ix: ix["shards"][0].update(samples=True), "Invalid sample count"),
        (lambda ix: ix["shards"][0].update(column_sizes=[-8]), "Invalid column sizes"),
        (lambda ix: ix["shards"][0]["raw_data"].update(hashes={"sha1": 3}), "Invalid hashes"),
    ],
)
def test_bad_index_entries_name_the_file(tmp_path: Path, edit: object, needle: str) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"}, size_limit=64) as w:
        for i in range(20):
            w.write({"x": i})
    _edit_index(tmp_path, edit)
    index = str(tmp_path / "index.json")
    with pytest.raises(CorruptIndexError, match=needle) as info:
        streamx.StreamingDataset(local=str(tmp_path), batch_size=1)
    assert index in str(info.value)
