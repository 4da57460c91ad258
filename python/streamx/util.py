"""Small helpers with mosaicml-streaming's ``streaming.base.util`` names (byte sizes, list
arguments, waiting for a file, retries); ``streamx.base.util`` re-exports them."""

from __future__ import annotations

import functools
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast, overload

from streamx import sizes

__all__ = [
    "bytes_to_int",
    "clean_stale_shared_memory",
    "get_import_exception_message",
    "get_list_arg",
    "number_abbrev_to_int",
    "retry",
    "wait_for_file_to_exist",
]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
ExcTypes = type[BaseException] | Sequence[type[BaseException]]


def bytes_to_int(bytes_str: int | str) -> int:
    """A byte count from an int or a string such as ``'64mb'`` or ``'1.5kb'`` (powers of 1024).

    Raises:
        ValueError: The suffix or number is not understood.
    """
    return sizes.bytes_to_int(bytes_str)


def number_abbrev_to_int(abbrev_str: int | str) -> int:
    """A count from an int or a string such as ``'10k'`` or ``'1.5b'`` (powers of 1000).

    Raises:
        ValueError: The suffix or number is not understood.
    """
    return sizes.number_abbrev_to_int(abbrev_str)


def get_list_arg(text: str) -> list[str]:
    """Splits a comma-separated command-line value; empty text gives ``[]``.

    Examples:
        >>> get_list_arg("a,b")
        ['a', 'b']
    """
    return text.split(",") if text else []


def wait_for_file_to_exist(
    filename: str, poll_interval: float, timeout: float, err_msg: str
) -> None:
    """Polls until ``filename`` exists.

    Args:
        filename: The path to wait for.
        poll_interval: Seconds between checks (also slept once after it appears).
        timeout: Seconds to wait in all.
        err_msg: Start of the error message.

    Raises:
        RuntimeError: The file did not appear within ``timeout`` seconds.
    """
    start = time.monotonic()
    while True:
        time.sleep(poll_interval)
        if os.path.exists(filename):
            time.sleep(poll_interval)
            return
        elapsed = time.monotonic() - start
        if elapsed > timeout:
            raise RuntimeError(f"{err_msg}{timeout:.3f} < {elapsed:.3f} secs.")


def clean_stale_shared_memory() -> None:
    """Does nothing: streamx keeps no shared-memory blocks, so none can be left stale.

    mosaicml-streaming's version unlinks its leaked ``/dev/shm`` blocks; calling this from
    code written for it is safe and leaves every other process's shared memory alone.
    """


def get_import_exception_message(package_name: str, extra_deps: str) -> str:
    """The message for an ``ImportError`` of an optional dependency.

    Args:
        package_name: The missing package.
        extra_deps: The streamx extra that installs it.
    """
    return (
        f"streamx was installed without {package_name} support. To use {package_name} "
        f"related packages with streamx, run `pip install 'streamx-data[{extra_deps}]'`."
    )


@overload
def retry(
    exc_class: ExcTypes = ...,
    clean_up_fn: Callable[[], None] | None = ...,
    num_attempts: int = ...,
    initial_backoff: float = ...,
    max_jitter: float = ...,
) -> Callable[[F], F]: ...


@overload
def retry(exc_class: F) -> F: ...


def retry(
    exc_class: ExcTypes | F = Exception,
    clean_up_fn: Callable[[], None] | None = None,
    num_attempts: int = 3,
    initial_backoff: float = 1.0,
    max_jitter: float = 0.5,
) -> Callable[[F], F] | F:
    """Retries the decorated function on the given exceptions, with exponential backoff.

    Attempt ``i`` (from 0) that fails waits ``initial_backoff * 2**i + U(0, max_jitter)``
    seconds. ``@retry`` without parentheses retries on any ``Exception``.

    Args:
        exc_class: Exception class(es) to retry on. Defaults to ``Exception``.
        clean_up_fn: Called after every failed attempt.
        num_attempts: Attempts in all, at least 1; the last failure is re-raised.
        initial_backoff: Seconds before the first retry.
        max_jitter: Upper bound of the random seconds added to each wait.

    Raises:
        ValueError: ``num_attempts`` is below 1.

    Examples:
        >>> calls = []
        >>> @retry(KeyError, num_attempts=2, initial_backoff=0, max_jitter=0)
        ... def flaky():
        ...     calls.append(1)
        ...     if len(calls) < 2:
        ...         raise KeyError("once")
        ...     return "ok"
        >>> flaky(), len(calls)
        ('ok', 2)
    """
    if num_attempts < 1:
        raise ValueError("num_attempts must be at-least 1")
    if callable(exc_class) and not (
        isinstance(exc_class, type) and issubclass(exc_class, BaseException)
    ):
        func = cast(F, exc_class)  # used bare, as ``@retry``
        return _retrying(func, (Exception,), None, num_attempts, initial_backoff, max_jitter)
    caught = (exc_class,) if isinstance(exc_class, type) else tuple(exc_class)

    def decorator(func: F) -> F:
        return _retrying(func, caught, clean_up_fn, num_attempts, initial_backoff, max_jitter)

    return decorator


def _retrying(
    func: F,
    caught: tuple[type[BaseException], ...],
    clean_up_fn: Callable[[], None] | None,
    num_attempts: int,
    initial_backoff: float,
    max_jitter: float,
) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(num_attempts):
            try:
                return func(*args, **kwargs)
            except caught as err:
                if clean_up_fn is not None:
                    clean_up_fn()
                logger.debug(f"Attempt {attempt + 1}/{num_attempts} failed with: {err}")
                if attempt + 1 == num_attempts:
                    raise
                time.sleep(initial_backoff * 2**attempt + random.random() * max_jitter)
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]
