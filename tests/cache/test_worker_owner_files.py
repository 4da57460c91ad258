"""DataLoader workers end by ``os._exit``, so no destructor removes the owner file each one
made in the node's cache ledger. The loader's pass releases them once torch has joined the
workers, also a pass left early (a ``break``, the iterator closed, or still open when the
process exits); owners that still live keep theirs."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import streamx
from owner_locks import is_held
from streamx import _core
from streamx.cli.ledger_types import LedgerPinSnapshot

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.dist

N = 96


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("owners") / "remote"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=200) as writer:
        for i in range(N):
            writer.write({"id": i})
    return out


def _sample_ids(batch: list[dict[str, int]]) -> dict[str, list[int]]:
    return {"id": [sample["id"] for sample in batch]}


def _loader(remote: Path, local: Path, persistent: bool = False) -> streamx.StreamingDataLoader:
    """A loader whose workers read sample by sample (a collate of ours), so that they, not
    this process, pin the shards."""
    ds = streamx.StreamingDataset(
        remote=str(remote), local=str(local), batch_size=4, shuffle=True, shuffle_block_size=32
    )
    return streamx.StreamingDataLoader(
        ds,
        batch_size=4,
        num_workers=2,
        multiprocessing_context="fork",
        collate_fn=_sample_ids,
        persistent_workers=persistent,
    )


def _owner_files(local: Path) -> list[Path]:
    return sorted((local / ".streamx" / "owners").iterdir())


def _pins(local: Path) -> list[LedgerPinSnapshot]:
    (ledger,) = (p for p in (local / ".streamx").glob("ledger-*") if p.suffix != ".lock")
    return _core.ledger_snapshot(str(ledger))["pins"]


def test_a_pass_leaves_no_file_of_its_exited_workers(remote: Path, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    loader = _loader(remote, local)
    seen: list[int] = []
    made: set[Path] = set()
    for batch in loader:
        seen += batch["id"]
        made.update(_owner_files(local))
    assert sorted(seen) == list(range(N))
    assert len(made) >= 2, f"fewer owner files than workers: {made}"
    # torch joined the workers before the pass ended: only live owners' files are left.
    left = _owner_files(local)
    assert all(map(is_held, left)), left
    assert len(left) < len(made)
    assert _pins(local) == []
    del loader
    gc.collect()
    assert _owner_files(local) == []  # and this process's own went with its dataset


def test_live_workers_keep_their_files_until_they_exit(remote: Path, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    loader = _loader(remote, local, persistent=True)
    assert sorted(i for batch in loader for i in batch["id"]) == list(range(N))
    live = _owner_files(local)
    assert len(live) >= 2 and all(map(is_held, live)), live  # the workers, alive
    iterator = loader._iterator
    assert iterator is not None
    iterator._shutdown_workers()  # type: ignore[attr-defined]
    assert _owner_files(local) == live  # gone, but nobody has looked yet
    dead = [p for p in live if not is_held(p)]
    assert len(dead) >= 2, live
    ds = loader.dataset
    assert isinstance(ds, streamx.StreamingDataset)
    ds.end_loader_pass()
    assert _owner_files(local) == sorted(set(live) - set(dead))
    del loader, ds, iterator
    gc.collect()
    assert _owner_files(local) == []


def test_a_pass_broken_out_of_leaves_no_file_of_its_workers(remote: Path, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    loader = _loader(remote, local)
    for _ in loader:
        made = _owner_files(local)
        assert len(made) >= 1 and all(map(is_held, made)), made
        break
    # The loop's iterator was collected at the break: its workers joined, their files gone.
    assert _owner_files(local) == []
    assert _pins(local) == []
    # A closed iterator ends its pass too, and the next pass reads everything.
    passes = iter(loader)
    next(passes)
    next(passes)
    assert len(_owner_files(local)) >= 2
    passes.close()  # type: ignore[attr-defined]
    assert _owner_files(local) == []
    assert sorted(i for batch in loader for i in batch["id"]) == list(range(N))


_OPEN_AT_EXIT = textwrap.dedent(
    """
    import json, os, sys
    import streamx
    remote, local = sys.argv[1], sys.argv[2]

    def ids(batch):
        return {"id": [sample["id"] for sample in batch]}

    ds = streamx.StreamingDataset(remote=remote, local=local, batch_size=4, shuffle=True)
    loader = streamx.StreamingDataLoader(
        ds, batch_size=4, num_workers=2, multiprocessing_context="fork", collate_fn=ids
    )
    batches = iter(loader)
    next(batches)
    next(batches)
    print(json.dumps(sorted(os.listdir(os.path.join(local, ".streamx", "owners")))))
    # exits with the pass open: neither closed nor collected before the interpreter ends
    """
)


def test_a_pass_open_at_exit_leaves_no_file(remote: Path, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    proc = _run_script(_OPEN_AT_EXIT, remote, local)
    during = proc.stdout.strip().splitlines()[-1]
    assert during.count('"') >= 4, during  # both workers had made theirs
    assert _owner_files(local) == [], proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


_KEPT_AT_EXIT = textwrap.dedent(
    """
    import json, os, sys
    import streamx
    from torch.utils.data import DataLoader
    remote, local, kind = sys.argv[1], sys.argv[2], sys.argv[3]

    def ids(batch):
        return {"id": [sample["id"] for sample in batch]}

    ds = streamx.StreamingDataset(
        remote=remote, local=local, batch_size=4, shuffle=True, cache_limit=20_000
    )
    make = DataLoader if kind == "torch" else streamx.StreamingDataLoader
    loader = make(
        ds,
        batch_size=4,
        num_workers=2,
        multiprocessing_context="fork",
        collate_fn=ids,
        persistent_workers=True,
    )
    seen = sorted(i for batch in loader for i in batch["id"])
    assert seen == list(range(int(sys.argv[4]))), seen
    if kind == "torch":  # a second pass, open at exit: the workers hold their shards
        next(iter(loader))
    print(json.dumps(sorted(os.listdir(os.path.join(local, ".streamx", "owners")))))
    # exits with the persistent workers alive
    """
)


def _run_kept(remote: Path, local: Path, kind: str) -> subprocess.CompletedProcess[str]:
    return _run_script(_KEPT_AT_EXIT, remote, local, kind, str(N))


def _run_script(script: str, *args: object) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter (so its exit is a real one), with ``args``."""
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_persistent_workers_alive_at_exit_leave_no_file(remote: Path, tmp_path: Path) -> None:
    """A pass that finished keeps its persistent workers; they are stopped at exit and their
    owner files go with them, not left for the next process to sweep."""
    local = tmp_path / "cache"
    proc = _run_kept(remote, local, "streamx")
    during = proc.stdout.strip().splitlines()[-1]
    assert during.count('"') >= 4, during  # both workers had made theirs, and lived
    assert _owner_files(local) == [], proc.stderr
    assert _pins(local) == []
    assert "Traceback" not in proc.stderr, proc.stderr


_INLINE_OPEN_AT_EXIT = textwrap.dedent(
    """
    import sys
    import streamx
    ds = streamx.StreamingDataset(
        remote=sys.argv[1], local=sys.argv[2], batch_size=4, cache_limit=20_000
    )
    batches = iter(streamx.StreamingDataLoader(ds, batch_size=4, num_workers=2))
    next(batches)
    # exits with the pass open, read by this process (no Python per sample: no workers)
    """
)


def test_a_pass_read_inline_open_at_exit_is_ended_before_teardown(
    remote: Path, tmp_path: Path
) -> None:
    """The batches read in the loader's own process are closed by the exit hook: their
    ``finally`` released the pass's shards while modules were being torn down, and failed."""
    local = tmp_path / "cache"
    proc = _run_script(_INLINE_OPEN_AT_EXIT, remote, local)
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert _pins(local) == []
    assert _owner_files(local) == []


def test_workers_killed_at_exit_hold_back_no_next_process(remote: Path, tmp_path: Path) -> None:
    """torch's own DataLoader has no pass end of ours: its persistent workers, killed at
    exit with a pass open, leave their owner files and pins. The next process trusts neither
    (the owners' locks are gone): it reads its pass whole, and the dead pins are gone."""
    local = tmp_path / "cache"
    _run_kept(remote, local, "torch")
    dead = _owner_files(local)
    assert len(dead) >= 2 and not any(map(is_held, dead)), dead
    assert _pins(local), "the killed workers held no pin: nothing left to prove"
    ds = streamx.StreamingDataset(remote=str(remote), local=str(local), batch_size=4)
    assert sorted(int(sample["id"]) for sample in ds) == list(range(N))
    assert not set(dead) & set(_owner_files(local))
    assert _pins(local) == []
