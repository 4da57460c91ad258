"""``streamx simulate`` on real index files, local and on a moto S3 server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sim_oracle import write_index
from typer.testing import CliRunner

from streamx.cli.app import app

MB = 1_000_000
SHARDS, PER_SHARD, SIZE = 30, 400, 8 * MB


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("simcli") / "data"
    write_index(root, [PER_SHARD] * SHARDS, [SIZE] * SHARDS)
    return root


def _run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["simulate", *args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_training_yaml(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(
        "compute: {gpus: 8}\nparameters:\n  global_train_batch_size: 64\n  max_duration: 2ep\n"
        f"  train_loader:\n    num_workers: 2\n    dataset:\n      local: {data}\n"
        "      shuffle: true\n      shuffle_algo: py1s\n      predownload: 32\n"
    )
    out = _run(str(run), "-n", "2", "-t", "0.01", "-b", "100MB")
    summary = out["runs"][0]
    assert summary["steps"] == 2 * (SHARDS * PER_SHARD // 64)
    # Two nodes, no cache limit: each node fetches each shard it reads once.
    assert SHARDS * SIZE <= summary["bytes_downloaded"] <= 2 * SHARDS * SIZE
    quality = next(iter(out["shuffle_quality"].values()))
    assert abs(quality["order_correlation"]) < 0.2


def test_remote_index_and_calibration(data: Path, s3: Any, tmp_path: Path) -> None:
    s3.put("ds/index.json", (data / "index.json").read_bytes())
    bench = tmp_path / "bench.json"
    bench.write_text(
        json.dumps(
            {
                "version": 1,
                "source": s3.url("ds"),
                "download": {
                    "per_connection_bytes_per_s": 1e7,
                    "shard_bytes_per_s": 2e7,
                    "aggregate_bytes_per_s": 4e7,
                    "connections": 4,
                },
                "decode": {"samples_per_s": 1e5, "bytes_per_s": 1e9},
                "dataloader": {"samples_per_s": 500.0, "workers": 2, "batch_size": 8},
            }
        )
    )
    out = _run(
        "--index",
        s3.url("ds"),
        "-n",
        "1",
        "-d",
        "2",
        "-w",
        "2",
        "-t",
        "0",
        "--batch-size",
        "8",
        "--calibrate",
        str(bench),
        "--no-quality",
    )
    summary = out["runs"][0]
    assert summary["bytes_downloaded"] == SHARDS * SIZE
    # Compute per step is the DataLoader's floor (8 samples at 500/s); the link is 40 MB/s.
    assert summary["total_time"] >= summary["steps"] * 8 / 500.0
    assert summary["total_time"] >= SHARDS * SIZE / 4e7
    # The bench's 4 connections split each 8 MB shard into at most 4 GETs (32 would make
    # 8 of 1 MiB); one GET for the index from S3.
    assert SHARDS + 1 <= summary["requests"] <= SHARDS * 4 + 1


def test_compare_and_quality_without_shuffle(data: Path) -> None:
    out = _run(
        "--index",
        str(data),
        "-n",
        "1",
        "-d",
        "2",
        "-t",
        "0.001",
        "-b",
        "1GB",
        "--batch-size",
        "16",
        "--compare",
        "shuffle=false,true",
    )
    names = [r["name"] for r in out["runs"]]
    assert names == ["shuffle=False", "shuffle=True"]
    plain, shuffled = (out["shuffle_quality"][n] for n in names)
    assert plain["order_correlation"] > 0.99
    assert shuffled["entropy"] > plain["entropy"]
    assert out["runs"][0]["min_cache_limit"] < out["runs"][1]["min_cache_limit"]


def test_plots_and_report(data: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    _run(
        "--index",
        str(data),
        "-n",
        "1",
        "-d",
        "2",
        "-t",
        "0.01",
        "-b",
        "50MB",
        "--batch-size",
        "8",
        "--out",
        str(out_dir),
        "--no-quality",
    )
    for name in ("sim-throughput.png", "sim-downloads.png", "sim-stall.png"):
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    assert "http" not in page.replace("http-equiv", "")


def test_missing_flag_without_terminal_fails_clearly(data: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "streamx", "simulate", "--index", str(data), "-n", "1"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert "--devices" in proc.stderr


def test_bad_compare_field(data: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--index",
            str(data),
            "-n",
            "1",
            "-d",
            "1",
            "-t",
            "0.1",
            "-b",
            "1MB",
            "--batch-size",
            "4",
            "--compare",
            "colour=red",
        ],
    )
    assert result.exit_code == 1
    assert "--compare 'colour=red'" in result.output


def test_cache_limit_evicts_and_downloads_again(data: Path) -> None:
    args: tuple[str, ...] = ("--index", str(data), "-n", "1", "-d", "1", "-w", "1", "-t", "0.01")
    args += ("-b", "1GB")
    args += ("--batch-size", "4", "--epochs", "2", "--no-quality")
    free = _run(*args)["runs"][0]
    tight = _run(*args, "--cache-limit", str(4 * SIZE))["runs"][0]
    # Unlimited: each shard once. Four shards' room: shards read again are fetched again.
    assert free["bytes_downloaded"] == SHARDS * SIZE
    assert tight["bytes_downloaded"] > SHARDS * SIZE
    assert tight["min_cache_limit"] == free["min_cache_limit"] > 4 * SIZE


def test_cache_limit_below_one_step_warns(data: Path) -> None:
    from streamx.sim import SimConfig, SimStream, load_shards, simulate

    cfg = SimConfig(
        (SimStream(load_shards(str(data))),),
        devices=2,
        workers=2,
        batch_size=8,
        cache_limit=2 * SIZE,
        shuffle=True,
    )
    # A step reads 16 samples from up to 16 shards: two shards' room cannot hold them.
    with pytest.warns(UserWarning, match="single steps read"):
        result = simulate(cfg)
    assert result.min_cache_limit > 2 * SIZE


def test_yaml_without_shuffle_reads_in_order(data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(
        "global_train_batch_size: 16\nmax_duration: 1ep\n"
        f"train_loader:\n  num_workers: 1\n  dataset:\n    local: {data}\n"
    )
    args = (str(run), "-n", "1", "-d", "2", "-t", "0.01", "-b", "100MiB")
    plain = _run(*args)
    quality = next(iter(plain["shuffle_quality"].values()))
    assert quality["order_correlation"] > 0.99
    assert plain["runs"][0] == {
        **_run(*args, "--no-shuffle")["runs"][0],
        "simulate_seconds": plain["runs"][0]["simulate_seconds"],
    }
    shuffled = next(iter(_run(*args, "--shuffle")["shuffle_quality"].values()))
    assert abs(shuffled["order_correlation"]) < 0.5


def test_small_runs_print_binary_units_by_magnitude(tmp_path: Path) -> None:
    small = tmp_path / "small"
    write_index(small, [100] * 4, [2 * 2**20] * 4)
    args = ["simulate", "--index", str(small), "-n", "1", "-d", "1", "-t", "0.01"]
    args += ["-b", "100MiB", "--batch-size", "8", "--no-quality"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "8.00 MiB downloaded" in result.stdout
    assert "cache needed" in result.stdout and "GB" not in result.stdout
    out = _run(*args[1:])
    assert out["units"]["bytes_downloaded"].startswith("B")
    assert out["units"]["total_time"] == "s"
    assert out["runs"][0]["bytes_downloaded"] == 8 * 2**20
