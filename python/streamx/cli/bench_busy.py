"""``streamx bench``'s busy pass: what downloading costs the DataLoader beside it.

A cold epoch downloads while the loader decodes, on the same cores: the client decrypts
TLS and copies bodies, and a server on the node (a test's, a proxy) encrypts them. The warm
pass alone misses that. The busy pass reads the warm cache again while the loader's own
download of the measured shards runs beside it, and charges the loader's lost time to the
bytes that download moved (the simulator's ``SimConfig.loader_time_per_byte``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamx import StreamingDataset

__all__ = ["MIN_WINDOW_S", "busy_seconds_per_byte", "keep_list", "lost_seconds_per_byte"]

# The busy window lasts at least this long (the download runs again until it has): one
# download of 16 shards takes a quarter second at this VM's rates, and such windows moved
# the figure by 2x (1.2 to 2.6 s per GB) from one calibration to the next.
MIN_WINDOW_S = 0.5


def lost_seconds_per_byte(window: float, samples: int, warm_rate: float, moved: int) -> float:
    """Seconds the loader lost per byte ``moved`` beside it: ``samples`` delivered in
    ``window`` seconds would have taken ``samples / warm_rate`` alone (0 when they did not
    take longer, as a passing quiet spell can make them).

    Examples:
        >>> lost_seconds_per_byte(2.0, 1000, 1000.0, 10**9)  # 1 s lost to 1 GB
        1e-09
        >>> lost_seconds_per_byte(1.0, 1000, 900.0, 10**9)
        0.0
    """
    lost = window - samples / max(warm_rate, 1e-9)
    return max(lost, 0.0) / max(moved, 1)


def busy_seconds_per_byte(
    dataset: StreamingDataset,
    fetch: Callable[[], int],
    samples: int,
    workers: int,
    batch_size: int,
    min_window: float = MIN_WINDOW_S,
) -> float:
    """Seconds the DataLoader's workers together lose per byte that ``fetch`` (the loader's
    download, returning the bytes it moved) moves while they read the first ``samples`` of
    ``dataset`` from a warm cache over and over.

    The loader's first batch (its workers' start-up) comes before the clock starts; the
    busy window ends when ``fetch`` does, called again until ``min_window`` seconds have
    passed, and a quiet window as long follows at once, so the two meet the same load on
    this node.
    """
    from torch.utils.data import DataLoader

    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        collate_fn=keep_list,
        persistent_workers=workers > 0,
    )
    batches = _cycle(loader, samples)
    next(batches)
    moved, busy, window = _busy_window(batches, fetch, min_window)
    quiet, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < window:
        quiet += next(batches)
    return lost_seconds_per_byte(window, busy, quiet / max(elapsed, 1e-9), moved)


def _busy_window(
    batches: Iterator[int], fetch: Callable[[], int], min_window: float
) -> tuple[int, int, float]:
    """(bytes ``fetch`` moved, samples read meanwhile, seconds) of ``batches`` read while
    ``fetch`` runs on another thread, again until ``min_window`` seconds have passed."""
    done, moved, failed = threading.Event(), [0], list[BaseException]()

    def download() -> None:
        try:
            began = time.perf_counter()
            moved[0] = fetch()
            while time.perf_counter() - began < min_window:
                moved[0] += fetch()
        except BaseException as err:  # raised again on the calling thread
            failed.append(err)
        finally:
            done.set()

    thread = threading.Thread(target=download, name="streamx-bench-busy", daemon=True)
    seen, start = 0, time.perf_counter()
    thread.start()
    while not done.is_set():
        seen += next(batches)
    window = time.perf_counter() - start
    thread.join()
    if failed:
        raise failed[0]
    return moved[0], seen, window


def _cycle(loader: Iterable[list[Any]], samples: int) -> Iterator[int]:
    """Batch sizes of ``loader``'s first ``samples`` samples, again and again (the part of
    the dataset the warm pass cached)."""
    while True:
        seen = 0
        for batch in loader:
            seen += len(batch)
            yield len(batch)
            if seen >= samples:
                break


def keep_list(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Collate that keeps a batch as a list (bytes and PIL columns do not stack)."""
    return batch
