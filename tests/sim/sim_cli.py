"""``streamx simulate`` run from the CLI over a synthetic dataset with a calibration file, as
the calibrated-loader tests read it: the predicted samples/s of the one run."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from streamx.cli.app import app

__all__ = ["cli_samples_per_s"]


def cli_samples_per_s(calibration: Path, workers: int, *, model: float, shard_bytes: int) -> float:
    """Samples/s of 4,000 samples in shards of 100 (``shard_bytes`` each), one node, one
    device, ``workers`` workers, batches of 16, the model's ``model`` seconds a sample."""
    args = ["simulate", "--samples", "4000", "--shard-samples", "100", "--shard-bytes"]
    args += [str(shard_bytes), "-n", "1", "-d", "1", "-w", str(workers), "-t", str(model)]
    args += ["--batch-size", "16", "--calibrate", str(calibration), "--no-quality", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rate: float = json.loads(result.stdout)["runs"][0]["samples_per_s"]
    return rate
