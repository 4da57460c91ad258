"""A nullable Parquet column's null (``None``) that torch's ``default_collate`` refuses: every
``StreamingDataLoader`` path (per sample, batched in the main process, batched in workers)
gives the batches before it, then raises torch's error type naming the column and the sample
(torch's own message names neither). A plain torch ``DataLoader`` is the oracle for the
batches and the error type; its message stays torch's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from batch_compare import assert_same_batches

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset

torch = pytest.importorskip("torch")

ROWS, BATCH = 16, 4


def _table() -> pa.Table:
    # n: a null at row 5 (batch 1, sample 1). s: nulls at rows 2 (after a string: torch
    # keeps a batch of strings as their list, None included) and 8 (batch 2's first).
    return pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "n": pa.array([None if j == 5 else j for j in range(ROWS)], pa.int64()),
            "s": pa.array([None if j in (2, 8) else f"r{j}" for j in range(ROWS)], pa.string()),
        }
    )


def _no_setup(_worker: int) -> None:
    """A worker_init_fn: the batches then come from worker processes, not the main one."""


def _outcome(loader: Any) -> tuple[list[Any], BaseException | None]:
    batches: list[Any] = []
    try:
        for batch in loader:
            batches.append(batch)
    except (TypeError, RuntimeError) as err:
        return batches, err
    return batches, None


@pytest.mark.parametrize(
    ("dropped", "before", "named"),
    [
        ([], 1, "column 'n' is None (a null) in sample 1 of its batch"),
        (["n"], 2, "column 's' is None (a null) in sample 0 of its batch"),
    ],
)
def test_every_path_names_the_null_column_and_sample(
    tmp_path: Path, dropped: list[str], before: int, named: str
) -> None:
    table = _table().drop_columns(dropped)
    (tmp_path / "src").mkdir()
    pq.write_table(table, tmp_path / "src" / "t.parquet", row_group_size=ROWS)

    def dataset(cache: str) -> StreamingDataset:
        stream = ParquetStream(remote=str(tmp_path / "src"), local=str(tmp_path / cache))
        return StreamingDataset(streams=[stream], batch_size=BATCH, shuffle=False)

    theirs, their_error = _outcome(torch.utils.data.DataLoader(dataset("t"), batch_size=BATCH))
    assert their_error is not None and "column" not in str(their_error)
    assert len(theirs) == before
    loaders = {
        "per sample": StreamingDataLoader(dataset("a"), batch_size=BATCH, batched=False),
        "batched here": StreamingDataLoader(dataset("b"), batch_size=BATCH),
        "batched in workers": StreamingDataLoader(
            dataset("c"),
            batch_size=BATCH,
            num_workers=2,
            worker_init_fn=_no_setup,
            multiprocessing_context="fork",
        ),
    }
    assert loaders["batched here"]._inline() and loaders["batched in workers"]._batched
    for path, loader in loaders.items():
        ours, error = _outcome(loader)
        assert_same_batches(ours, theirs, path)
        assert type(error) is type(their_error), path
        # (A worker's error comes back as its traceback's text, which holds the message.)
        assert named in str(error) and str(their_error) in str(error), path
