"""Shared fixtures: a clean environment for world detection and tiny datasets."""

from __future__ import annotations

import atexit
import fcntl
import gc
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(autouse=True)
def _single_process_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as one process unless they set the torchrun variables themselves."""
    for name in _WORLD_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_host_remembered_as_ignoring_ranges() -> None:
    """A test's server may listen on a port an earlier test's range-ignoring server had:
    the process-wide memory of such hosts must not carry over (a CI flake of
    tests/storage/test_parallel_get.py took a whole GET for a parted download)."""
    object_sources = sys.modules.get("streamx.storage.object_sources")
    if object_sources is not None:
        object_sources.forget_rangeless_hosts()


@pytest.fixture(autouse=True)
def _no_host_remembered_as_throttling() -> None:
    """Likewise for a throttling server's pace and limit: nginx picks a free port, so a
    test may meet the port an earlier test's throttling server had, and start paced."""
    throttle = sys.modules.get("streamx.storage.throttle")
    if throttle is not None:
        throttle.forget_hosts()


def pytest_configure(config: pytest.Config) -> None:
    """mosaicml-streaming leaks about 12 descriptors per dataset; give the oracle room. And
    streamx's byte code is written once, before any test (in the controller, under
    pytest-xdist): where ``PYTHONDONTWRITEBYTECODE`` is set, the hundreds of interpreters the
    tests start would each compile the modules they import from source."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if not hasattr(config, "workerinput"):
        _compile_streamx()
        if os.environ.get(_ORACLE_LOCK) is None:  # pytest-xdist's workers inherit it
            handle, path = tempfile.mkstemp(prefix="streamx-tests-oracle-", suffix=".lock")
            os.close(handle)
            os.environ[_ORACLE_LOCK] = path
            config.add_cleanup(lambda: os.unlink(path))


def _compile_streamx() -> None:
    """Writes the byte code of the streamx tree the tests import (as ``pip install`` does)."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("streamx")
    if spec is not None and spec.submodule_search_locations:
        for tree in spec.submodule_search_locations:
            compileall.compile_dir(tree, quiet=1)


# A lock file (made by the session's first process) through which the oracle's datasets
# register their shared memory one at a time across the session's processes.
_ORACLE_LOCK = "STREAMX_TESTS_ORACLE_LOCK"


@pytest.fixture(autouse=True)
def _oracle_prefixes_take_turns() -> None:
    """Under pytest-xdist, test files run in several processes at once, and
    mosaicml-streaming registers a dataset's shared-memory prefix by finding a free number
    and then creating it: another process doing the same in between fails it with
    ``FileExistsError``. Its registrations in the test processes take turns (a test that
    starts the oracle in subprocesses of its own runs them apart from other tests' anyway)."""
    oracle = sys.modules.get("streaming.base.dataset")
    path = os.environ.get(_ORACLE_LOCK)
    if oracle is None or path is None or getattr(oracle, "_streamx_turns", False):
        return
    register = vars(oracle)["get_shm_prefix"]

    def taking_turns(*args: object, **kwargs: object) -> object:
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return register(*args, **kwargs)

    vars(oracle).update(get_shm_prefix=taking_turns, _streamx_turns=True)


# Open descriptors above which the oracle's leaked shared memory is released after a test.
_FD_HIGH_WATER = 2000


@pytest.fixture(autouse=True)
def _release_oracle_shared_memory() -> Iterator[None]:
    """mosaicml-streaming keeps every dataset's shared memory open (two descriptors per block,
    about 130 per dataset) until exit through ``atexit``; hundreds of oracle runs exhaust the
    descriptor limit. Release the blocks of finished tests once many are open."""
    yield
    if "streaming" not in sys.modules or len(os.listdir("/proc/self/fd")) < _FD_HIGH_WATER:
        return
    from streaming.base.shared.memory import SharedMemory

    gc.collect()
    with warnings.catch_warnings():
        # isinstance() on some torch objects reads deprecated attributes.
        warnings.simplefilter("ignore")
        blocks = [obj for obj in gc.get_objects() if isinstance(obj, SharedMemory)]
    for block in blocks:
        block.cleanup()  # type: ignore[no-untyped-call]  # mosaicml-streaming: unannotated
        atexit.unregister(block.cleanup)
