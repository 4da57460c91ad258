"""The request-rate term: a store admitting a fixed number of requests per second, met by
the downloader's clumps of parts, waits and adaptive limit (streamx.sim.request_cap)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamx.cli.app import app
from streamx.sim import SimConfig, SimStream, simulate, synth_shards
from streamx.sim.link_fields import parse_link, parse_rate
from streamx.sim.link_model import link_rates
from streamx.sim.request_cap import _Bucket, capped_link
from streamx.sim.requests import part_bytes
from streamx.sim.tune import tune
from streamx.sim.yaml_run import read_run_yaml

MIB = 1 << 20


def _config(**kw: object) -> SimConfig:
    shards = synth_shards(600, 40, 8_000_000)
    base: dict[str, object] = {
        "devices": 1,
        "workers": 1,
        "batch_size": 8,
        "time_per_sample": 0.0025,
        "bandwidth": 300e6,
        "shuffle": True,
        "shards_ahead": 4,
        "connection_bandwidth": 40 * MIB,
        "retry_after": 1.0,
    }
    return SimConfig((SimStream(shards),), **{**base, **kw})  # type: ignore[arg-type]


def test_the_bucket_admits_as_nginx_limit_req_does() -> None:
    # 10 r/s, no burst: a request less than 0.1 s after the last admitted one is refused,
    # and a refused one does not move the clock.
    bucket = _Bucket(10.0, 0)
    assert [bucket.admit(t) for t in (0.0, 0.05, 0.09, 0.1, 0.15, 0.2)] == [
        True,
        False,
        False,
        True,
        False,
        True,
    ]
    # burst 2: three at once are admitted, the fourth refused; 0.1 s frees one more.
    burst = _Bucket(10.0, 2)
    assert [burst.admit(0.0) for _ in range(4)] == [True, True, True, False]
    assert burst.admit(0.1) and not burst.admit(0.1)


def test_a_lower_admitted_rate_is_slower() -> None:
    def play(rate: float, burst: int = 0) -> float:
        return capped_link(rate, burst, 32, 4, 8 << 20, MIB, 0.0, 40e6, 1.0, 16).bytes_per_s

    assert play(2.0) < play(10.0) < play(1000.0, 64)
    # A burst lets a clump of parts through at once.
    assert play(40.0) < play(40.0, 16)


def test_a_lower_request_rate_lowers_the_predicted_throughput() -> None:
    free = simulate(_config()).summary()
    fast = simulate(_config(request_rate=40.0)).summary()
    slow = simulate(_config(request_rate=2.0)).summary()
    assert slow["samples_per_s"] < fast["samples_per_s"] < free["samples_per_s"]
    # The refusals are counted (not billed), and found by the model, not given.
    assert free["throttled_requests"] == 0 < fast["throttled_requests"]
    assert fast["requests"] == free["requests"]


def test_fewer_larger_parts_pay_under_a_request_cap() -> None:
    # Each admitted request brings one part: 4 parts of 2 MB beat 8 of 1 MiB.
    size = 8_000_000
    small = capped_link(40.0, 0, 32, 1, size, part_bytes(size, 32), 0.0, 40e6, 1.0, 8)
    large = capped_link(40.0, 0, 4, 1, size, part_bytes(size, 4), 0.0, 40e6, 1.0, 8)
    assert large.bytes_per_s > small.bytes_per_s
    rates = link_rates(_config(request_rate=40.0), files_at_once=6)
    assert rates.bandwidth < 300e6 and 0 < rates.throttled < 1
    assert rates.shard_bandwidth is not None and rates.shard_bandwidth <= rates.bandwidth


def test_the_first_chunks_range_reads_wait_once_each() -> None:
    # 4 shards in the first chunk, each reached by a header read and a sample read that
    # follow an admitted request at once: refused, then 1 s + 0.25 s of jitter each.
    capped = link_rates(_config(request_rate=40.0), files_at_once=6, chunk_shards=4.0)
    assert capped.startup == pytest.approx(4 * 2 * 1.25)
    # With a burst a read is refused only as often as any request.
    burst = link_rates(
        _config(request_rate=40.0, request_burst=8), files_at_once=6, chunk_shards=4.0
    )
    assert burst.startup == pytest.approx(4 * 2 * 1.25 * burst.throttled)
    # No limit, no wait; and the simulated run starts that much later.
    assert link_rates(_config(), files_at_once=6, chunk_shards=4.0).startup == 0.0
    first = simulate(_config(request_rate=40.0)).step_times[0]
    assert first > simulate(_config(request_rate=40.0, request_burst=1000)).step_times[0]


def test_tune_trades_connections_for_larger_parts_under_a_request_cap() -> None:
    found = tune(_config(request_rate=40.0), only={"workers": [1]})
    given, best = found.given, found.recommended
    assert best.summary["samples_per_s"] >= given.summary["samples_per_s"]
    assert best.summary["requests"] < given.summary["requests"]
    assert best.config.connections < given.config.connections


def test_the_settings_parse_and_refuse() -> None:
    assert parse_rate("request_rate", "40r/s") == 40.0
    assert parse_rate("request_rate", "600r/m") == 10.0
    assert parse_link({"request-rate": "40r/s", "request_burst": "5"}, "run.yaml") == {
        "request_rate": 40.0,
        "request_burst": 5,
    }
    with pytest.raises(ValueError, match="request_rate"):
        parse_rate("request_rate", "0r/s")
    with pytest.raises(ValueError, match="not both"):
        _config(request_rate=40.0, throttled=0.2)
    with pytest.raises(ValueError, match="request_burst"):
        _config(request_rate=40.0, request_burst=-1)


def test_a_real_limit_req_refuses_what_the_model_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nginx's limit_req at 20 requests/s against a file of 24 1 MiB parts on 8 connections: the
    downloader's clumps draw 503s there, and the model (the same split, rate and waits)
    draws them too; every part is answered once, as the model counts."""
    from nginx_server import Nginx, find_nginx  # tests/storage, on the path (conftest)

    from streamx.storage.download import download_file
    from streamx.storage.slots import LocalSlots

    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    size = 24 * MIB
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "blob").write_bytes(bytes(range(256)) * (size // 256))
    with Nginx(tmp_path / "root", limit_req="20r/s") as server:
        download_file(
            f"{server.endpoint}/blob", str(tmp_path / "f"), expected_size=size, slots=LocalSlots(8)
        )
        log = server.log_when(lambda entries: sum(e.status == 206 for e in entries) >= 24)
    part = part_bytes(size, 8, MIB)
    assert sum(1 for e in log if e.status == 206) == -(-size // part) == 24
    model = capped_link(20.0, 0, 8, 1, size, part, 0.0, 1e9, 1.0, 1)
    assert sum(1 for e in log if e.status == 503) > 0
    assert model.throttled_share > 0


def test_flags_and_yaml_take_a_request_rate(tmp_path: Path) -> None:
    args = [
        "simulate", "-n", "1", "-d", "1", "-w", "1", "-t", "0.001", "-b", "1GB",
        "--batch-size", "8", "--samples", "800", "--shard-samples", "100",
        "--shard-bytes", "8MiB", "--connection-bandwidth", "40MB", "--retry-after", "1",
        "--no-quality", "--json",
    ]  # fmt: skip
    free = CliRunner().invoke(app, args)
    capped = CliRunner().invoke(app, [*args, "--request-rate", "5r/s", "--request-burst", "0"])
    assert free.exit_code == 0 and capped.exit_code == 0, capped.output
    ours = json.loads(capped.stdout)["runs"][0]
    theirs = json.loads(free.stdout)["runs"][0]
    assert ours["samples_per_s"] < theirs["samples_per_s"]
    assert ours["throttled_requests"] > 0 == theirs["throttled_requests"]
    both = CliRunner().invoke(app, [*args, "--request-rate", "5", "--throttled", "10%"])
    assert both.exit_code == 1 and "not both" in both.output
    run = tmp_path / "run.yaml"
    run.write_text(
        "global_train_batch_size: 8\nmax_duration: 1ep\n"
        "train_loader: {num_workers: 1, dataset: {remote: /nowhere}}\n"
        "simulator: {request_rate: 40r/s, request_burst: 2, retry_after: 1}\n"
    )
    settings = read_run_yaml(str(run)).settings
    assert settings == {"request_rate": 40.0, "request_burst": 2, "retry_after": 1.0}
