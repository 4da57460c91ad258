"""Case tables shared by the order parity tests (``test_order_*.py``): shuffle algorithms,
seeds, world shapes, batching methods, the dataset specs whole epochs are drawn from, and
the whole-epoch check itself."""

from __future__ import annotations

from order_helpers import OrderSpec, assert_same_outcome, mosaic_work, streamx_work

ALGOS = ("naive", "py1br", "py1e", "py1s", "py2s")
SEEDS = (0, 1, 42, 9176, 2**31 - 1, 2**40 + 7, 2**64 - 4)

SHAPES = [
    (1, 1, 1),
    (1, 1, 2),
    (1, 2, 1),
    (1, 3, 2),
    (2, 1, 1),
    (2, 2, 2),
    (2, 4, 1),
    (3, 1, 2),
    (4, 2, 3),
    (4, 8, 1),
    (8, 1, 1),
    (6, 2, 2),
]

WORK_SPECS: dict[str, OrderSpec] = {
    "one_stream": OrderSpec(shards=((30, 30, 30, 7),), batch_size=2),
    "uneven_empty": OrderSpec(shards=((11, 0, 40, 3, 0, 25),), batch_size=3, shuffle_block_size=20),
    "tiny": OrderSpec(shards=((3,),), batch_size=1),
    "mix_prop": OrderSpec(
        shards=((40, 25, 8), (17, 17, 17), (60,)),
        weights=(("proportion", 0.5), ("proportion", 0.3), ("proportion", 0.2)),
        epoch_size=300,
        batch_size=4,
        shuffle_block_size=64,
    ),
    "mix_repeat": OrderSpec(
        shards=((40, 25, 8), (17, 17, 17)),
        weights=(("repeat", 1.5), ("repeat", 0.4)),
        batch_size=2,
        sampling_granularity=4,
    ),
    "mix_choose": OrderSpec(
        shards=((40, 25, 8), (33, 0, 17)),
        weights=(("choose", 50), ("choose", 120)),
        batch_size=2,
        sampling_method="fixed",
    ),
    "mix_natural": OrderSpec(shards=((90, 70), (50, 51, 52)), batch_size=4, shuffle_block_size=50),
    "equal_halves": OrderSpec(
        shards=((64, 64), (64, 64)),
        weights=(("proportion", 1), ("proportion", 1)),
        batch_size=3,
    ),
}
BATCHING = ("random", "stratified", "per_stream", "device_per_stream")


def check_work(
    spec: OrderSpec, shape: tuple[int, int, int], epoch: int, sample_in_epoch: int
) -> bool:
    """``generate_work`` of both libraries agree; ``True`` if it planned without error."""
    theirs = mosaic_work(spec, shape, epoch, sample_in_epoch)
    ours = streamx_work(spec, shape, epoch, sample_in_epoch)
    assert_same_outcome(theirs, ours, f"{spec} world={shape} epoch={epoch} at={sample_in_epoch}")
    return theirs.error is None
