"""``streamx.base.util`` against mosaicml-streaming's ``streaming.base.util``."""

from __future__ import annotations

import json
import os
import threading
import time
from multiprocessing import shared_memory
from typing import Any

import pytest

pytest.importorskip("streaming")
import itertools

import streaming.base.util as theirs

import streamx.base.util as ours
from streamx import MDSWriter

pytestmark = pytest.mark.compat


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except Exception as err:
        return (type(err).__name__, None)


@pytest.mark.parametrize("text", ["", "a", "a,b,c", "x,,y", ",", "spaced, out"])
def test_get_list_arg(text: str) -> None:
    assert ours.get_list_arg(text) == theirs.get_list_arg(text)


BYTE_INPUTS = [0, 1, 1234, 12.7, "1234", "1b", "1kb", "1KB", " 2mb ", "1.5gb", "3tb", "1pb"]
BYTE_INPUTS += ["2eb", "1zb", "1yb", "0.5kb", "kb", "1xb", "abc", "-1kb", "1.2.3mb"]


@pytest.mark.parametrize("value", BYTE_INPUTS)
def test_bytes_to_int(value: Any) -> None:
    assert _outcome(ours.bytes_to_int, value) == _outcome(theirs.bytes_to_int, value)


def test_bytes_to_int_space_before_unit() -> None:
    # A deliberate difference: mosaicml-streaming rejects a space before the unit.
    assert _outcome(theirs.bytes_to_int, "10 b") == ("ValueError", None)
    assert ours.bytes_to_int("10 b") == 10
    assert ours.bytes_to_int("2 kb") == 2048


ABBREV_INPUTS = [0, 7, 3.9, "7", "10k", "1.5m", "2b", "1t", "1K", " 3k ", "k", "1x", "abc"]


@pytest.mark.parametrize("value", ABBREV_INPUTS)
def test_number_abbrev_to_int(value: Any) -> None:
    assert _outcome(ours.number_abbrev_to_int, value) == _outcome(
        theirs.number_abbrev_to_int, value
    )


def _free_block(suffix: str, size: int) -> shared_memory.SharedMemory:
    for prefix in range(999_999, 900_000, -1):
        try:
            return shared_memory.SharedMemory(name=f"{prefix:06d}{suffix}", create=True, size=size)
        except FileExistsError:
            continue
    raise AssertionError("no free shared-memory name")


def test_clean_stale_shared_memory_leaves_other_blocks_alone() -> None:
    # A block shaped like one of mosaic's leaked ones, owned by "someone else". mosaic's own
    # datasets in this process (the compat tests) hold the lowest prefixes: take a free one.
    block = _free_block("_locals", 8)
    name = block.name.lstrip("/")
    try:
        assert block.buf is not None
        block.buf[:4] = b"keep"
        ours.clean_stale_shared_memory()
        again = shared_memory.SharedMemory(name=name)
        assert again.buf is not None
        assert bytes(again.buf[:4]) == b"keep"
        again.close()
    finally:
        block.close()
        block.unlink()


def test_get_import_exception_message_names_package_and_extra() -> None:
    message = ours.get_import_exception_message("gcsfs", extra_deps="gcs")
    assert "gcsfs" in message
    assert "pip install 'streamx-data[gcs]'" in message


def test_wait_for_file_to_exist(tmp_path: Any) -> None:
    path = str(tmp_path / "flag")
    timer = threading.Timer(0.05, lambda: open(path, "w").close())
    timer.start()
    ours.wait_for_file_to_exist(path, 0.01, 10, "never came: ")
    timer.join()
    with pytest.raises(RuntimeError, match="nope: "):
        ours.wait_for_file_to_exist(str(tmp_path / "missing"), 0.01, 0.05, "nope: ")


@pytest.mark.parametrize("with_args", [True, False])
def test_retry_until_success(with_args: bool) -> None:
    # With arguments it retries RuntimeError; used bare it retries any Exception.
    calls = 0
    succeed_on = 3 if with_args else 2
    decorator: Any = (
        ours.retry(RuntimeError, num_attempts=3, initial_backoff=0.001, max_jitter=0.001)
        if with_args
        else ours.retry
    )

    @decorator  # type: ignore[untyped-decorator]
    def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < succeed_on:
            raise RuntimeError("too soon")
        return "done"

    if not with_args:
        # Bare ``@retry`` backs off a full second; keep it to one retry.
        assert flaky() == "done"
        assert calls == 2
    else:
        assert flaky() == "done"
        assert calls == 3


def test_retry_gives_up_reraises_and_cleans_up() -> None:
    cleanups: list[int] = []

    @ours.retry(
        (KeyError, ValueError),
        clean_up_fn=lambda: cleanups.append(1),
        num_attempts=3,
        initial_backoff=0.001,
        max_jitter=0,
    )
    def always() -> None:
        raise KeyError("no")

    with pytest.raises(KeyError, match="no"):
        always()
    assert len(cleanups) == 3


def test_retry_ignores_other_exceptions_and_rejects_zero_attempts() -> None:
    calls = 0

    @ours.retry(KeyError, num_attempts=5, initial_backoff=0.001)
    def wrong() -> None:
        nonlocal calls
        calls += 1
        raise TypeError("not retried")

    with pytest.raises(TypeError):
        wrong()
    assert calls == 1
    for lib in (ours, theirs):
        with pytest.raises(ValueError, match="num_attempts"):
            lib.retry(num_attempts=0)


def test_retry_backs_off_exponentially() -> None:
    stamps: list[float] = []

    @ours.retry(RuntimeError, num_attempts=3, initial_backoff=0.05, max_jitter=0)
    def failing() -> None:
        stamps.append(time.monotonic())
        raise RuntimeError

    with pytest.raises(RuntimeError):
        failing()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert gaps[0] >= 0.05
    assert gaps[1] >= 0.1


def _write_partitions(root: str) -> None:
    for part in range(3):
        with MDSWriter(out=os.path.join(root, str(part)), columns={"x": "int"}) as out:
            for i in range(4 + part):
                out.write({"x": 100 * part + i})


@pytest.mark.parametrize("form", ["root", "list"])
def test_merge_index_matches_mosaic(tmp_path: Any, form: str) -> None:
    results = []
    for lib, name in ((ours, "ours"), (theirs, "theirs")):
        root = str(tmp_path / name)
        _write_partitions(root)
        if form == "root":
            lib.merge_index(root, keep_local=True)
        else:
            urls = [os.path.join(root, str(p), "index.json") for p in range(3)]
            lib.merge_index(urls, root, keep_local=True)
        with open(os.path.join(root, "index.json")) as file:
            results.append(json.load(file))
    assert results[0] == results[1]
    assert sum(shard["samples"] for shard in results[0]["shards"]) == 4 + 5 + 6
