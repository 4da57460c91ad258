"""With only the base install, each command that needs an extra says which one, in one line.

The commands run as ``python -m streamx`` in a venv that sees this checkout and the base
dependencies only (see bare_venv.py): no pyarrow, matplotlib, pyyaml or torch.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from bare_venv import bare_venv
from cli_run import Result, assert_one_line_failure


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bare_venv(tmp_path_factory.mktemp("bare") / "venv")


def run_bare(python: Path, *args: str, cwd: Path) -> Result:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [python, "-m", "streamx", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


SIM_FLAGS = ["-n", "1", "-d", "1", "-t", "0.01", "-b", "1GB", "--batch-size", "4"]


def test_convert_names_the_convert_extra(bare_python: Path, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(5)))
    result = run_bare(bare_python, "convert", str(rows), str(tmp_path / "out"), cwd=tmp_path)
    assert_one_line_failure(result, 'pip install "streamx-data[convert]"', "pyarrow")
    assert not (tmp_path / "out").exists()


def test_simulate_out_names_the_simulator_extra(bare_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "plots"
    result = run_bare(
        bare_python, "simulate", *SIM_FLAGS, "--samples", "2000", "--out", str(out), cwd=tmp_path
    )
    assert_one_line_failure(result, 'pip install "streamx-data[simulator]"', "matplotlib")
    assert not out.exists() or not list(out.iterdir()), "nothing written, no .png.tmp left"


def test_simulate_yaml_names_the_simulator_extra(bare_python: Path, tmp_path: Path) -> None:
    run_yaml = tmp_path / "run.yaml"
    run_yaml.write_text("global_train_batch_size: 8\n")
    result = run_bare(bare_python, "simulate", str(run_yaml), *SIM_FLAGS, cwd=tmp_path)
    assert_one_line_failure(result, 'pip install "streamx-data[simulator]"', "yaml")


def test_bench_names_the_torch_extra(bare_python: Path, dataset: str, tmp_path: Path) -> None:
    result = run_bare(bare_python, "bench", dataset, "--out", "", cwd=tmp_path)
    assert_one_line_failure(result, 'pip install "streamx-data[torch]"', "torch")


def test_base_commands_still_work(bare_python: Path, dataset: str, tmp_path: Path) -> None:
    """The bare venv is sound: a command that needs no extra runs in it."""
    result = run_bare(bare_python, "inspect", dataset, "--json", cwd=tmp_path)
    assert result.code == 0, result
    assert json.loads(result.out)["splits"][0]["samples"] == 300
