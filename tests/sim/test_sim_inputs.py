"""Absurd simulator inputs (NaN, infinities, negatives, unknown words) are refused, naming
the argument, on every route: the CLI, a training YAML, the UI's form and ``SimConfig``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_oracle import write_index
from typer.testing import CliRunner

from streamx.cli.app import app
from streamx.sim import SimConfig, SimStream, synth_shards
from streamx.sim.ui import run_form
from streamx.sim.units import fmt_bytes, parse_size

BASE = ["simulate", "--samples", "10k", "-n", "1", "-d", "1", "-w", "1", "-t", "0.01"]
BASE += ["-b", "100MiB", "--batch-size", "8", "--no-quality"]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _replace(flag: str, value: str) -> list[str]:
    args = list(BASE)
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    return args


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("-t", "nan", "--time-per-sample"),
        ("-t", "inf", "--time-per-sample"),
        ("-t", "-1", "--time-per-sample"),
        ("-b", "nan", "--bandwidth"),
        ("-b", "infMB", "--bandwidth"),
        ("-b", "1e400", "--bandwidth"),
        ("-b", "0", "--bandwidth"),
        ("-b", "-5MB", "--bandwidth"),
        ("--cache-limit", "nan", "--cache-limit"),
        ("--cache-limit", "-1GB", "--cache-limit"),
        ("--samples", "nan", "samples"),
        ("--samples", "infk", "samples"),
        ("--shard-bytes", "inf", "shard_bytes"),
        ("--shard-samples", "0", "shard_samples"),
        ("-n", "0", "nodes"),
        ("-d", "-3", "devices"),
        ("-w", "-1", "workers"),
        ("--batch-size", "0", "batch_size"),
        ("--epochs", "0", "epochs"),
        ("--max-batches", "-1", "max_batches"),
        ("--predownload", "-8", "predownload"),
        ("--seed", "-1", "shuffle_seed"),
        ("--shuffle-algo", "fast", "--shuffle-algo"),
        ("--partition-algo", "fast", "--partition-algo"),
    ],
)
def test_cli_refuses_absurd_values_naming_the_flag(flag: str, value: str, named: str) -> None:
    code, output = _cli(*_replace(flag, value))
    assert code != 0
    assert named in output
    assert "Traceback" not in output


@pytest.mark.parametrize("compare", ["shuffle=fast", "nodes=two", "bandwidth=nan", "workers=-1"])
def test_compare_refuses_unknown_values(compare: str) -> None:
    code, output = _cli(*BASE, "--compare", compare)
    assert code == 1
    field, _, value = compare.partition("=")
    assert f"`{field}`" in output and repr(value) in output


def test_compare_shuffle_accepts_words() -> None:
    code, output = _cli(*BASE, "--compare", "shuffle=off,on")
    assert code == 0, output
    assert "shuffle=False" in output and "shuffle=True" in output


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("      predownload: .nan\n", "predownload"),
        ("      cache_limit: .inf\n", "cache_limit"),
        ("      cache_limit: nanMB\n", "cache_limit"),
        ("      epoch_size: -5\n", "epoch_size"),
        ("      shuffle: fast\n", "shuffle"),
        ("      num_canonical_nodes: 0\n", "num_canonical_nodes"),
        ("      shuffle_block_size: -1\n", "shuffle_block_size"),
    ],
)
def test_yaml_refuses_absurd_values_naming_the_key(tmp_path: Path, line: str, named: str) -> None:
    data = tmp_path / "data"
    write_index(data, [100] * 4, [1 << 20] * 4)
    run = tmp_path / "run.yaml"
    run.write_text(
        "global_train_batch_size: 8\nmax_duration: 1ep\n"
        f"train_loader:\n    num_workers: 1\n    dataset:\n      local: {data}\n{line}"
    )
    code, output = _cli("simulate", str(run), "-n", "1", "-d", "1", "-t", "0.01", "-b", "1GiB")
    assert code == 1
    assert named in output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodes", "two"),
        ("nodes", "0"),
        ("devices", "1.5"),
        ("workers", "nan"),
        ("batch_size", "-1"),
        ("time_per_sample", "nan"),
        ("time_per_sample", "inf"),
        ("bandwidth", "nan"),
        ("bandwidth", "lots"),
        ("samples", "nan"),
        ("shard_samples", "x"),
        ("shard_bytes", "inf"),
        ("epochs", "0"),
        ("predownload", "-1"),
        ("cache_limit", "infGB"),
        ("shuffle", "fast"),
        ("shuffle_algo", "fast"),
    ],
)
def test_ui_form_refuses_absurd_values_naming_the_field(field: str, value: str) -> None:
    form = {"samples": "10k", "nodes": "1", "devices": "1", "workers": "1", "batch_size": "8"}
    with pytest.raises(ValueError, match=field) as err:
        run_form({**form, field: value})
    assert value in str(err.value) or field == "shard_samples"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("time_per_sample", float("nan")),
        ("time_per_sample", float("inf")),
        ("bandwidth", float("nan")),
        ("bandwidth", float("-inf")),
        ("shard_bandwidth", float("nan")),
        ("cache_limit", -1),
        ("predownload", -1),
        ("max_batches", 0),
        ("batch_size", 10**18),
        ("shuffle", "yes"),
    ],
)
def test_config_refuses_absurd_values(key: str, value: object) -> None:
    stream = SimStream(synth_shards(1000, 100, 1 << 20))
    with pytest.raises(ValueError, match=f"`{key}`"):
        SimConfig((stream,), **{key: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(("key", "value"), [("proportion", float("nan")), ("repeat", -1.0)])
def test_stream_weights_refuse_absurd_values(key: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"`{key}`"):
        SimStream(synth_shards(1000, 100, 1 << 20), **{key: value})  # type: ignore[arg-type]


def test_sizes_are_binary_in_and_out() -> None:
    assert parse_size("x", "64MB") == parse_size("x", "64MiB") == 64 * 2**20
    assert fmt_bytes(64 * 2**20) == "64.00 MiB"
    assert fmt_bytes(5_000_000) == "4.77 MiB"
    assert fmt_bytes(3 * 2**30) == "3.00 GiB"
    assert fmt_bytes(512) == "512 B"
