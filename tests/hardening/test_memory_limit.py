"""Under an address-space limit (``ulimit -v``), sizes from arguments or a state dict that
cannot be allocated raise ``MemoryError``, as in mosaicml-streaming, instead of aborting the
process (Rust aborts on a failed allocation). An order planned in pieces (``random`` batching
with ``py1e`` or no shuffle, the defaults) never holds the epoch, so the same sizes run there.
Each case runs in its own interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import streamx

LIMIT = 4 << 30

# Planned whole (another batching method or shuffle): the order cannot be held.
CASES = {
    "batch_size": (
        "ds = streamx.StreamingDataset(local=data, batch_size=2**28, batching_method='per_stream')"
    ),
    "epoch_size": (
        "ds = streamx.StreamingDataset(local=data, batch_size=4, epoch_size=2**30, "
        "shuffle=True, shuffle_algo='py1s')"
    ),
}

# Planned in pieces: the same sizes run in bounded memory under the limit.
PIECES_CASES = {
    "batch_size": "ds = streamx.StreamingDataset(local=data, batch_size=2**28)",
    "epoch_size": "ds = streamx.StreamingDataset(local=data, batch_size=4, epoch_size=2**30)",
    "num_canonical_nodes": (
        "ds = streamx.StreamingDataset(local=data, batch_size=4)\n"
        "ds.load_state_dict({'epoch': 0, 'sample_in_epoch': 0, "
        "'num_canonical_nodes': 2**26, 'shuffle_seed': 9176, 'initial_physical_nodes': None})"
    ),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("memlimit") / "data"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}) as writer:
        for i in range(100):
            writer.write({"id": i})
    return out


def _run(code: str, data: Path) -> subprocess.CompletedProcess[str]:
    script = (
        textwrap.dedent(
            f"""
            import resource, sys
            import streamx
            streamx.StreamingDataset  # imported before the limit, as a training script has
            data = sys.argv[1]
            resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))
            try:
            """
        )
        + textwrap.indent(code + "\nprint('first', next(iter(ds))['id'])", "    ")
        + textwrap.dedent(
            """
            except MemoryError as err:
                print("MemoryError:", err)
            print("alive")
            """
        )
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_sizes_beyond_the_limit_raise_memory_error(data: Path, case: str) -> None:
    done = _run(CASES[case], data)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "MemoryError:" in done.stdout, done.stdout
    assert "alive" in done.stdout


@pytest.mark.parametrize("case", sorted(PIECES_CASES))
def test_sizes_planned_in_pieces_run_under_the_limit(data: Path, case: str) -> None:
    done = _run(PIECES_CASES[case], data)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "first " in done.stdout and "MemoryError" not in done.stdout, done.stdout
    assert "alive" in done.stdout


def test_a_plain_epoch_runs_under_the_limit(data: Path) -> None:
    done = _run("ds = streamx.StreamingDataset(local=data, batch_size=4)", data)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "first 0" in done.stdout and "MemoryError" not in done.stdout, done.stdout
