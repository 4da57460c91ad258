"""A shard truncated or rewritten in place while streamx has it mapped (``cp``, ``rsync
--inplace`` or mosaicml-streaming's writer over a local dataset): the read raises
``CorruptShardError`` naming the shard, instead of the process dying of SIGBUS, and the
process goes on. Each case runs in its own interpreter, so a SIGBUS would show as its death.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import streamx

SAMPLES = 48
# 15 samples of 200 kB per shard: many pages, so a truncation leaves pages unmapped; and
# iteration decodes a few samples per call (about 1 MB), so most of a shard is read later.
BLOB = 200_000


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mapped") / "data"
    columns = {"id": "int", "blob": "bytes"}
    with streamx.MDSWriter(out=str(out), columns=columns, size_limit=16 * BLOB) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i, "blob": bytes([i]) * BLOB})
    return out


@pytest.fixture
def dataset(source: Path, tmp_path: Path) -> Path:
    """A copy of the dataset for one test to damage."""
    return Path(shutil.copytree(source, tmp_path / "data"))


def _run(code: str, data: Path) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        """
        import faulthandler, os, sys
        faulthandler.enable()  # installed first: our handler must chain past it, not break it
        import streamx
        from streamx.exceptions import CorruptShardError
        data = sys.argv[1]
        shard0 = os.path.join(data, "shard.00000.mds")
        """
    ) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script, str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_truncation_during_iteration_raises_and_the_process_survives(dataset: Path) -> None:
    done = _run(
        """
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False)
        seen = []
        try:
            for sample in ds:
                assert sample["blob"] == bytes([sample["id"]]) * len(sample["blob"])
                seen.append(sample["id"])
                if len(seen) == 1:
                    os.truncate(shard0, 4096)  # the rest of shard 0 is gone
        except CorruptShardError as err:
            print("raised:", err)
        print("seen", len(seen))
        print("alive")
        """,
        dataset,
    )
    assert done.returncode == 0, done.stderr
    assert "alive" in done.stdout
    assert "raised:" in done.stdout, done.stdout
    assert "shard.00000.mds" in done.stdout
    assert "truncated or rewritten in place" in done.stdout
    # Every sample handed out was checked above: none of zeros came out of shard 0.
    assert int(done.stdout.split("seen ")[1].split()[0]) < 15


def test_a_rewritten_shard_is_mapped_afresh_after_the_error(dataset: Path) -> None:
    done = _run(
        """
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False)
        original = open(shard0, "rb").read()
        ds[0]  # maps shard 0 (sample 10's pages, far from there, are not read yet)
        with open(shard0, "r+b") as f:  # rewritten in place, as rsync --inplace does
            f.truncate(0)
        try:
            ds[10]
        except CorruptShardError as err:
            print("raised:", err)
        with open(shard0, "r+b") as f:
            f.write(original)
        print("again", ds[10]["id"], ds[40]["id"], set(ds[10]["blob"]))
        """,
        dataset,
    )
    assert done.returncode == 0, done.stderr
    assert "raised:" in done.stdout and "shard.00000.mds" in done.stdout, done.stdout
    assert "again 10 40 {10}" in done.stdout


def test_a_fault_outside_streamx_still_reaches_the_previous_handler(dataset: Path) -> None:
    """A SIGBUS that is not ours goes to the handler installed before (faulthandler here),
    which reports it and lets the process die as it would have."""
    done = _run(
        """
        import mmap
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False)
        ds[0]  # streamx's handler is installed now
        path = os.path.join(data, "other.bin")
        with open(path, "wb") as f:
            f.write(b"x" * 65536)
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        os.truncate(path, 0)
        print("reading", flush=True)
        m[60000]
        print("survived a foreign fault")
        """,
        dataset,
    )
    assert "reading" in done.stdout
    assert "survived" not in done.stdout
    assert done.returncode == -7, (done.returncode, done.stderr)  # SIGBUS, as before
    assert "Bus error" in done.stderr  # faulthandler's report


def test_a_zero_copy_view_over_a_truncated_shard_keeps_its_bytes(dataset: Path) -> None:
    """``zero_copy=True`` views are memory over the shard's map, which holds a read lease:
    when this process truncates the file in place, the views handed out before keep the
    bytes they had (no SIGBUS, no zeros), and the next sample read from that shard raises
    ``CorruptShardError`` naming it."""
    done = _run(
        """
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False, zero_copy=True)
        first = ds[0]["blob"]
        late = ds[10]["blob"]  # a view of pages far from the start of the shard
        assert isinstance(late, memoryview) and bytes(late[:4]) == bytes([10]) * 4
        os.truncate(shard0, 4096)
        assert os.path.getsize(shard0) == 4096  # the truncation did happen
        print("view kept", set(bytes(late)), len(late), set(bytes(first)))
        try:
            ds[11]
        except CorruptShardError as err:
            print("raised:", err)
        del first, late
        print("alive")
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert f"view kept {{10}} {BLOB} {{0}}" in done.stdout, done.stdout
    assert "raised:" in done.stdout and "shard.00000.mds" in done.stdout, done.stdout
    assert "alive" in done.stdout


@pytest.mark.parametrize(
    "damage",
    [
        "os.truncate(sys.argv[1], 0)",
        # rsync --inplace / cp over the file: opened for writing, truncated, new bytes.
        "f = open(sys.argv[1], 'r+b'); f.truncate(0); f.write(b'new' * 1000); f.close()",
    ],
    ids=["truncate", "rewrite"],
)
def test_a_zero_copy_view_survives_another_process_changing_the_file(
    dataset: Path, damage: str
) -> None:
    """A third party (another process) truncates or rewrites the shard: its call waits for
    the lease to be given up, goes through, and the views keep their bytes."""
    done = _run(
        f"""
        import subprocess
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False, zero_copy=True)
        views = [ds[i]["blob"] for i in (3, 14)]
        other = subprocess.run([sys.executable, "-c", {("import sys, os; " + damage)!r}, shard0],
                               capture_output=True, text=True, timeout=60)
        assert other.returncode == 0, other.stderr
        print("size", os.path.getsize(shard0))
        print("kept", [set(bytes(v)) for v in views])
        try:
            ds[5]
        except CorruptShardError as err:
            print("raised:", err)
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "size 4096" not in done.stdout  # sanity: the damage is not the other test's
    assert "kept [{3}, {14}]" in done.stdout, done.stdout
    assert "raised:" in done.stdout and "shard.00000.mds" in done.stdout, done.stdout


def test_a_zero_copy_view_inherited_by_a_forked_child_keeps_its_bytes(dataset: Path) -> None:
    """A DataLoader worker forked after views were handed out holds them too: the lease's
    signal would go to the parent, so the child leases the file itself."""
    done = _run(
        """
        import subprocess
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False, zero_copy=True)
        late = ds[10]["blob"]
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(ready_w, b"x")
            os.read(go_r, 1)  # the file has been truncated by now
            ok = bytes(late) == bytes([10]) * len(late)
            os._exit(0 if ok else 3)
        os.read(ready_r, 1)
        subprocess.run([sys.executable, "-c", f"import os; os.truncate({shard0!r}, 0)"],
                       check=True, timeout=60)
        os.write(go_w, b"x")
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        print("parent", bytes(late) == bytes([10]) * len(late))
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "child 0" in done.stdout, done.stdout
    assert "parent True" in done.stdout, done.stdout


def test_a_shard_that_cannot_be_leased_is_copied_for_views(dataset: Path) -> None:
    """Another process holds the shard open for writing when it is mapped, so no lease can
    be had: the map is a private copy, and views of it survive any later change."""
    done = _run(
        """
        import subprocess
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import sys; f = open(sys.argv[1], 'r+b'); print('open', flush=True); "
             "sys.stdin.readline(); f.truncate(0); print('cut', flush=True); sys.stdin.readline()",
             shard0],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert holder.stdout.readline().strip() == "open"
        ds = streamx.StreamingDataset(local=data, batch_size=1, shuffle=False, zero_copy=True)
        late = ds[10]["blob"]
        holder.stdin.write("\\n"); holder.stdin.flush()
        assert holder.stdout.readline().strip() == "cut"
        print("size", os.path.getsize(shard0))
        print("copied view", set(bytes(late)), len(late))
        holder.stdin.write("\\n"); holder.stdin.flush(); holder.wait(timeout=60)
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "size 0" in done.stdout, done.stdout
    assert f"copied view {{10}} {BLOB}" in done.stdout, done.stdout


def test_a_zero_copy_view_outlives_eviction(dataset: Path, tmp_path: Path) -> None:
    """Eviction unlinks the file: a view handed out before stays valid while it lives."""
    done = _run(
        f"""
        ds = streamx.StreamingDataset(
            remote=data, local={str(tmp_path / "cache")!r}, batch_size=1, shuffle=False,
            zero_copy=True,
        )
        late = ds[10]["blob"]
        assert ds._shard_cache is not None
        assert ds._shard_cache.evict(0) > 0
        assert not os.path.exists(os.path.join({str(tmp_path / "cache")!r}, "shard.00000.mds"))
        print("evicted view", set(bytes(late)))
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "evicted view {10}" in done.stdout, done.stdout


def test_truncating_the_ledger_under_a_reader_never_kills(dataset: Path, tmp_path: Path) -> None:
    """Something other than streamx truncates the ``.streamx`` ledger while a reader runs:
    the process must not die of SIGBUS; the epoch ends, or fails with a Python error."""
    done = _run(
        f"""
        import glob
        local = {str(tmp_path / "cache")!r}
        ds = streamx.StreamingDataset(remote=data, local=local, batch_size=1, shuffle=False)
        seen = []
        try:
            for sample in ds:
                seen.append(sample["id"])
                if len(seen) == 2:
                    ledgers = [p for p in glob.glob(os.path.join(local, ".streamx", "ledger-*"))
                               if not p.endswith((".lock", ".manifest"))]
                    assert ledgers, os.listdir(os.path.join(local, ".streamx"))
                    for path in ledgers:
                        os.truncate(path, 0)
        except OSError as err:
            print("raised:", err)
        print("seen", len(seen))
        print("alive")
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "alive" in done.stdout
    if "raised:" in done.stdout:
        assert "truncated while in use" in done.stdout, done.stdout
    else:
        assert f"seen {SAMPLES}" in done.stdout, done.stdout


def test_a_zero_copy_view_outlives_eviction_by_the_cli(dataset: Path, tmp_path: Path) -> None:
    """``streamx cache evict --force`` from another process unlinks the shard too: a view
    handed out before still reads the original bytes."""
    cache = str(tmp_path / "cache")
    done = _run(
        f"""
        import subprocess
        ds = streamx.StreamingDataset(
            remote=data, local={cache!r}, batch_size=1, shuffle=False, zero_copy=True,
        )
        late = ds[10]["blob"]
        evicted = subprocess.run(
            [sys.executable, "-m", "streamx", "cache", "evict", {cache!r}, "--shard", "0",
             "--force"], capture_output=True, text=True,
        )
        assert evicted.returncode == 0, evicted.stderr
        assert not os.path.exists(os.path.join({cache!r}, "shard.00000.mds"))
        print("evicted view", bytes(late) == bytes([10]) * len(late), len(late))
        """,
        dataset,
    )
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert f"evicted view True {BLOB}" in done.stdout, done.stdout
