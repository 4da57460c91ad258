"""The simulator over sources read in place: Parquet row groups and WebDataset tars are its
shards, as a dataset over them would read them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from streamx.sim import load_shards

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "in_place"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_run import run_cli
from wds_data import write_tars


def test_row_groups_and_tars_are_the_shards(tmp_path: Path) -> None:
    rows = pa.table({"id": list(range(100)), "text": [f"t{i}" for i in range(100)]})
    pq.write_table(rows, tmp_path / "t.parquet", row_group_size=30)
    table = load_shards(str(tmp_path / "t.parquet"))
    assert table.samples.tolist() == [30, 30, 30, 10]
    assert (table.raw_bytes > 0).all() and not table.zip_bytes.any()
    write_tars(str(tmp_path / "tars"), [7, 5, 9])
    tars = load_shards(str(tmp_path / "tars"))
    assert tars.samples.tolist() == [7, 5, 9]
    sizes = sorted(p.stat().st_size for p in (tmp_path / "tars").iterdir())
    assert sorted(tars.raw_bytes.tolist()) == sizes


def test_litdata_chunks_are_the_shards(tmp_path: Path) -> None:
    from lit_data import write_litdata

    write_litdata(str(tmp_path / "lit"), 20, 8, images=False)
    table = load_shards(str(tmp_path / "lit"))
    assert table.samples.tolist() == [8, 8, 4]
    sizes = sorted(p.stat().st_size for p in (tmp_path / "lit").glob("chunk-*.bin"))
    assert sorted(table.raw_bytes.tolist()) == sizes


def test_simulate_cli_over_tars(tmp_path: Path) -> None:
    write_tars(str(tmp_path / "tars"), [7, 5, 9])
    args = ["simulate", "--index", str(tmp_path / "tars"), "-n", "1", "-d", "1", "-t", "0.01"]
    args += ["-b", "1GB"]
    result = run_cli(*args, "--batch-size", "4", "--json", "--no-quality")
    assert result.code == 0, result.err
    run = json.loads(result.out)["runs"][0]
    total = sum(p.stat().st_size for p in (tmp_path / "tars").iterdir())
    assert run["bytes_downloaded"] == total
