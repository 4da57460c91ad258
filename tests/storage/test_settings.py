"""The download settings read from the environment: defaults, and clear errors naming the
variable for values that make no sense."""

from __future__ import annotations

import pytest

from streamx.storage import settings


def test_shards_ahead_defaults_to_four_and_takes_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", raising=False)
    assert settings.shards_ahead() == 4
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "0")
    assert settings.shards_ahead() == 0
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "9")
    assert settings.shards_ahead() == 9


@pytest.mark.parametrize("raw", ["-1", "two", "1.5"])
def test_a_bad_shards_ahead_names_the_variable(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", raw)
    with pytest.raises(ValueError, match=r"STREAMX_DOWNLOAD_SHARDS_AHEAD must be a non-negative"):
        settings.shards_ahead()


@pytest.mark.parametrize("name", ["STREAMX_DOWNLOAD_CONNECTIONS", "STREAMX_DOWNLOAD_PART_SIZE"])
def test_counts_that_must_be_positive_refuse_zero(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "0")
    with pytest.raises(ValueError, match=rf"{name} must be a positive integer, got '0'"):
        settings.download_connections() if "CONNECTIONS" in name else settings.part_size(1, 1)


def test_part_size_spreads_a_file_but_not_below_the_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STREAMX_DOWNLOAD_PART_SIZE", raising=False)
    mib = 1 << 20
    assert settings.part_size(64 * mib, 32) == 2 * mib  # over every connection
    assert settings.part_size(1024 * mib, 32) == 8 * mib  # capped at the largest part
    assert settings.part_size(4 * mib, 32) == settings.MIN_PART_SIZE
