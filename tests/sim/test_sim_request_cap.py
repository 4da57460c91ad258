"""The request-rate term: a store admitting a fixed number of requests per second, met by
the downloader's pace on request starts, its split of files while paced and its waits
(streamx.sim.request_cap, streamx.sim.paced_host)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamx.cli.app import app
from streamx.sim import SimConfig, SimStream, simulate, synth_shards
from streamx.sim.link_fields import parse_link, parse_rate
from streamx.sim.link_model import link_rates
from streamx.sim.paced_host import PacedHost
from streamx.sim.request_cap import _Bucket, capped_link
from streamx.sim.requests import part_bytes
from streamx.sim.run import _paced_extra
from streamx.sim.tune import tune
from streamx.sim.yaml_run import read_run_yaml
from streamx.storage.request_pace import FIRST_PACE
from streamx.storage.settings import PACED_AHEAD_FACTOR

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
    def play(rate: float, burst: int = 0, cold: bool = False) -> float:
        link = capped_link(rate, burst, 32, 4, 8 << 20, MIB, 0.0, 40e6, 1.0, 16, cold)
        return link.bytes_per_s

    assert play(2.0) < play(10.0) < play(1000.0, 64)
    # A cold host sends a clump of parts: a burst lets it through, so the start is quicker.
    slow = capped_link(40.0, 0, 32, 1, 8 << 20, MIB, 0.0, 40e6, 1.0, 8, True)
    quick = capped_link(40.0, 16, 32, 1, 8 << 20, MIB, 0.0, 40e6, 1.0, 8, True)
    assert quick.start_delay < slow.start_delay and quick.refused < slow.refused


def test_the_pace_spaces_starts_and_is_cut_once_a_round() -> None:
    host = PacedHost(32)
    # Calm: requests start as they come.
    assert [host.take(0.0) for _ in range(8)] == [0.0] * 8 and host.calm(0.0)
    # The first refusal paces the host at half the rate seen (8 a second), at least 10.
    host.throttled(0.0, 0.01)
    assert host.pace(0.01) == 10.0 and not host.calm(0.01)
    # Starts are spaced from one interval after the cut (the store has just admitted one).
    assert [host.take(0.01) for _ in range(3)] == pytest.approx([0.11, 0.21, 0.31])
    # A refusal within a second of the cut, or of a request sent before it, cuts nothing.
    host.throttled(0.5, 0.6)
    host.throttled(0.0, 1.5)
    assert host.pace(1.5) == 10.0 and host.limit == 32
    # A second cut within 5 s halves the pace, and the limit on requests at once too.
    host.throttled(1.2, 1.6)
    assert host.pace(1.6) == 5.0 and host.limit == 16
    # An answer that waited for its slot raises the pace; quiet seconds double it.
    host.answered(1.7, True, MIB, 0.1)
    assert host.pace(1.7) == pytest.approx(5.75) and host.limit == 17
    assert host.pace(4.7) == pytest.approx(11.5)


def test_a_paced_host_takes_fewer_larger_gets_per_file() -> None:
    # Calm, a 64 MiB file over 32 connections is 32 GETs of 2 MiB; paced at 10 a second
    # with 40 MB/s connections, sqrt(10 x 64 MiB / (files x 40 MB/s)) of them.
    host = PacedHost(32)
    assert host.requests_for_files(64 * MIB, 1) is None
    host.start_paced(40e6)
    assert host.requests_for_files(64 * MIB, 1) == 4
    assert host.requests_for_files(64 * MIB, 4) == 2
    # The play: once paced, an 8 MB file of eight 1 MiB parts is one GET.
    paced = capped_link(40.0, 0, 32, 4, 8 << 20, MIB, 0.0, 40e6, 1.0, 16)
    assert paced.gets_per_file == 1.0 and paced.refused == 0
    # Cold, the first file is split before the pace is known: its clump is refused but for
    # one part, and the refused parts are asked again after Retry-After (one by one); the
    # files after it come in fewer GETs.
    cold = capped_link(40.0, 0, 32, 1, 64 * MIB, 2 * MIB, 0.0, 40e6, 1.0, 4, True)
    assert cold.start_delay > 0.5 and cold.refused >= 31
    assert cold.gets_per_file < 32


def test_a_lower_request_rate_lowers_the_predicted_throughput() -> None:
    free = simulate(_config()).summary()
    fast = simulate(_config(request_rate=40.0)).summary()
    slow = simulate(_config(request_rate=0.5)).summary()
    assert slow["samples_per_s"] < fast["samples_per_s"] < free["samples_per_s"]
    # The refusals are counted (not billed), and found by the model, not given; a paced
    # host brings each shard in fewer GETs.
    assert free["throttled_requests"] == 0 < fast["throttled_requests"]
    assert fast["requests"] < free["requests"]


def test_the_first_chunk_meets_one_refusal_not_one_per_range_read() -> None:
    # The first shard's sample read is refused and range reads give way from then on. The
    # shard's first part starts one interval of the new pace later, which the store admits:
    # the start waits that interval, not a Retry-After, however many shards the chunk reads.
    one = link_rates(_config(request_rate=40.0), files_at_once=6, chunk_shards=1.0)
    four = link_rates(_config(request_rate=40.0), files_at_once=6, chunk_shards=4.0)
    assert four.startup == one.startup and 0.0 < four.startup < 0.5
    # The play sends two range reads, not two per shard.
    reads = capped_link(40.0, 0, 32, 1, 8_000_000, MIB, 0.0, 40 * MIB, 1.0, 8, True, True)
    alone = capped_link(40.0, 0, 32, 1, 8_000_000, MIB, 0.0, 40 * MIB, 1.0, 8, True, False)
    assert reads.tries - alone.tries <= 2
    # Range reads give way from then on (each starting its shard's download, so the chunk's
    # shards download side by side); without them nothing gives way.
    assert reads.reads_gave_way and not alone.reads_gave_way
    # Their starts come one slot of the first pace apart; a calm host's start together.
    assert four.chunk_gap == pytest.approx(1.0 / FIRST_PACE)
    calm = _config(request_rate=40.0, request_burst=1000)
    assert link_rates(calm, files_at_once=6, chunk_shards=4.0).chunk_gap == 0.0
    # No limit, no wait; and the simulated run starts that much later.
    assert link_rates(_config(), files_at_once=6, chunk_shards=4.0).startup == 0.0
    first = simulate(_config(request_rate=40.0)).step_times[0]
    assert first > simulate(_config(request_rate=40.0, request_burst=1000)).step_times[0]
    rates = link_rates(_config(request_rate=40.0), files_at_once=6)
    assert rates.bandwidth < 300e6 and 0 < rates.throttled < 1
    assert rates.shard_bandwidth is not None and rates.shard_bandwidth <= rates.bandwidth


def test_tune_is_no_slower_and_no_dearer_under_a_request_cap() -> None:
    found = tune(_config(request_rate=40.0), only={"workers": [1]})
    given, best = found.given, found.recommended
    assert best.summary["samples_per_s"] >= given.summary["samples_per_s"]
    assert best.summary["requests"] <= given.summary["requests"]


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


def test_a_real_limit_req_paces_as_the_model_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nginx's limit_req at 20 requests/s against a file of 24 1 MiB parts on 8 connections:
    the first clump draws 503s there, then the pace spaces the starts and the parts not yet
    sent are merged, so the file comes in fewer GETs than parts; the model (the same split,
    rate and waits) draws refusals and merges too."""
    from nginx_server import Nginx, find_nginx  # tests/storage, on the path (conftest)

    from streamx.storage.download import download_file
    from streamx.storage.slots import LocalSlots
    from streamx.storage.throttle import forget_hosts

    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    forget_hosts()
    size = 24 * MIB
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "blob").write_bytes(bytes(range(256)) * (size // 256))
    try:
        with Nginx(tmp_path / "root", limit_req="20r/s") as server:
            download_file(
                f"{server.endpoint}/blob",
                str(tmp_path / "f"),
                expected_size=size,
                slots=LocalSlots(8),
            )
            log = server.log_when(
                lambda entries: sum(e.sent for e in entries if e.status == 206) >= size
            )
    finally:
        forget_hosts()
    assert (tmp_path / "f").read_bytes() == (tmp_path / "root" / "blob").read_bytes()
    part = part_bytes(size, 8, MIB)
    parts = -(-size // part)
    gets = sum(1 for e in log if e.status == 206)
    model = capped_link(20.0, 0, 8, 1, size, part, 0.0, 1e9, 1.0, 1, True)
    assert sum(1 for e in log if e.status == 503) > 0 and model.refused > 0
    assert gets < parts == 24 and model.gets_per_file < parts


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


def test_a_throttled_start_deepens_the_look_ahead() -> None:
    # The loader fetches PACED_AHEAD_FACTOR times its shards_ahead while a store paces it:
    # once the cold start meets a refusal, the node's play runs with the extra files.
    throttled = _config(request_rate=40.0)
    deeper = link_rates(throttled, files_at_once=2, chunk_shards=1.0, paced_extra=4)
    assert deeper == link_rates(throttled, files_at_once=6, chunk_shards=1.0)
    assert deeper != link_rates(throttled, files_at_once=2, chunk_shards=1.0)
    # A store whose burst admits the start never paces: the look-ahead stays as it was.
    calm = _config(request_rate=40.0, request_burst=1000)
    same = link_rates(calm, files_at_once=2, chunk_shards=1.0, paced_extra=4)
    assert same == link_rates(calm, files_at_once=2, chunk_shards=1.0)
    # simulate() passes each process's extra shards_ahead.
    assert _paced_extra(_config(workers=2)) == 2 * 4 * (PACED_AHEAD_FACTOR - 1)


def test_the_look_ahead_takes_its_slots_at_the_raised_pace() -> None:
    """A request fetched ahead of its reader takes only a slot free when it asks
    (``RequestPace.take(urgent=False)``), so the answers' raises speed up the look-ahead's
    later starts however many connections queue for them: 15 one-GET files on 32
    connections come no slower than on 4. A model that gave each queued request its slot
    at the pace of the moment it was queued kept 32 connections at the first pace (12.6
    requests/s for the whole window: 91 against 113 MB/s)."""
    host = PacedHost(32)
    host.start_paced(40e6)
    assert host.take(0.0) == 0.0 and host.free_at(0.05) == pytest.approx(0.1)
    assert host.free_at(0.2) == 0.2  # a free slot is taken at once
    size = 7_998_000

    def node(connections: int) -> float:
        alone = part_bytes(size, connections, 8 * MIB)
        link = capped_link(
            40.0, 0, connections, 15, size, 8 * MIB, 0.0, 40 * MIB, 1.0, 15, True, True, 1, alone
        )
        return link.bytes_per_s

    assert node(32) >= 0.95 * node(4)
