"""Resume walks: a job of world size 8 is SIGKILLed at a random point, resumed on world size 2
from the last step all its ranks committed, killed again, resumed on 8, and so on; the last
job finishes the epoch (``walk_driver.py``, ``walk_rank.py``).

The protocol is a trainer's: after each step every rank commits, atomically, its state dict
and the ids it trained on; a resumed job loads the state of the last step every rank
committed (rank 0's: the state is global, and every rank's must be the same), and the samples
of later steps, committed by some ranks only, do not count (they are delivered again). The
global batch is constant (per-rank batch = global / world) and so is ``num_canonical_nodes``,
so elastic determinism promises that:

- the committed samples of the whole walk are the epoch's, each exactly once;
- global step ``t`` of the walk holds the samples of step ``t`` of an uninterrupted run
  (the order within a step depends on the world; the set does not);
- a step some ranks committed before a kill is delivered again as the same step, with the
  samples those ranks had.

After the walk no process of a killed job is left, and no streamx state directory of one.
The driver's choices are seeded, but where a kill lands depends on timing, so a rerun walks
through other points (the summary line printed per walk says what the kills hit).
The default runs walk 8 -> 2 -> 8 -> 2 -> 8 (four kills) in three ways of reading, and one
walk whose job is killed after every rank committed the epoch's last step (the job resumed
from there delivers nothing); the slow ones (``make test-full``) walk 8 -> 2 -> 8 ... through
100 kill points each, in every way of reading, and end that way in every one too.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from walk_driver import (
    Walk,
    WalkConfig,
    node_copies,
    run_walk,
    runs_left,
    uninterrupted,
    write_dataset,
)

pytest.importorskip("torch")
pytestmark = pytest.mark.dist

GLOBAL_BATCH = 16
# 8 canonical nodes: every physical node count here (1, 2, 4, 8) divides it.
DATASET = {"shuffle": True, "num_canonical_nodes": 8, "shuffle_block_size": 64, "shuffle_seed": 5}
SMALL = 512  # 32 global steps; a multiple of every world x workers x batch: no padding
LARGE = 12_288  # 768 global steps: room for 100 kills, each a few steps in (~3 on average)
EIGHT_TO_TWO = ((2, 4), (1, 2))  # (nodes, ranks per node): 2 nodes x 4, then 1 node x 2


def _config(
    variant: str,
    num_samples: int,
    kills: int,
    seed: int,
    layouts: tuple[tuple[int, int], ...] = EIGHT_TO_TWO,
    end_kill: bool = False,
) -> WalkConfig:
    return WalkConfig(
        variant=variant,
        num_samples=num_samples,
        global_batch=GLOBAL_BATCH,
        dataset=DATASET,
        layouts=layouts,
        kills=kills,
        seed=seed,
        end_kill=end_kill,
    )


def _steps(steps: list[list[int]]) -> list[list[int]]:
    """Each global step's ids, sorted (the order within a step depends on the world)."""
    return [sorted(ids) for ids in steps]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The small and the large dataset, written once."""
    root = tmp_path_factory.mktemp("walk_data")
    out = {}
    for n in (SMALL, LARGE):
        write_dataset(root / f"mds{n}", n)
        out[n] = root / f"mds{n}"
    return out


_REFERENCE: dict[int, list[list[int]]] = {}


def _reference(source: Path, num_samples: int, tmp: Path) -> list[list[int]]:
    """The global steps of an uninterrupted epoch on 2 nodes x 4 ranks (run once)."""
    if num_samples not in _REFERENCE:
        config = _config("loader0", num_samples, 0, 0)
        locals_ = node_copies(source, tmp / "reference_nodes", 2)
        steps = uninterrupted(tmp / "reference", config, EIGHT_TO_TWO[0], locals_)
        assert Counter(i for ids in steps for i in ids) == Counter(range(num_samples))
        assert all(len(ids) == GLOBAL_BATCH for ids in steps)
        _REFERENCE[num_samples] = steps
    return _REFERENCE[num_samples]


def _check_walk(
    walk: Walk, config: WalkConfig, reference: list[list[int]], locals_: list[str]
) -> None:
    print(f"{config.variant} {config.layouts} seed {config.seed}: {walk.summary()}")
    how = f"{config}\n{walk.describe()}"
    ids = [i for step in walk.steps for i in step]
    assert Counter(ids) == Counter(range(config.num_samples)), how  # each exactly once
    assert _steps(walk.steps) == _steps(reference), how  # step by step, the same order
    for seg in walk.segments:  # a step some ranks committed comes again, with their samples
        for step, partial in seg.partial.items():
            assert not Counter(partial) - Counter(walk.steps[step - 1]), (step, how)
    assert walk.segments[-1].committed == config.total_steps, how
    assert walk.kills == config.kills, f"the epoch ended before the last kill:\n{how}"
    # The killed jobs' state directories on the last job's nodes were collected.
    last_nodes = config.layouts[config.kills % len(config.layouts)][0]
    assert runs_left(locals_[:last_nodes]) == [], how


def test_uninterrupted_order_is_the_same_on_8_and_2_ranks(
    data: dict[int, Path], tmp_path: Path
) -> None:
    reference = _reference(data[SMALL], SMALL, tmp_path)
    config = _config("loader2-procs", SMALL, 0, 0)
    locals_ = node_copies(data[SMALL], tmp_path / "nodes", 1)
    on_two = uninterrupted(tmp_path / "two", config, EIGHT_TO_TWO[1], locals_)
    assert _steps(on_two) == _steps(reference)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("variant", "seed"),
    [("loader0", 1), ("loader2-procs", 2), ("dataset", 3)],
)
def test_walk_8_2_8_2_8(variant: str, seed: int, data: dict[int, Path], tmp_path: Path) -> None:
    """Four kills: 8 -> 2 -> 8 -> 2, then 8 finishes the epoch."""
    reference = _reference(data[SMALL], SMALL, tmp_path)
    config = _config(variant, SMALL, 4, seed)
    locals_ = node_copies(data[SMALL], tmp_path / "nodes", 2)
    walk = run_walk(tmp_path / "walk", config, locals_)
    _check_walk(walk, config, reference, locals_)


def _walk_to_the_end(variant: str, seed: int, data: dict[int, Path], tmp_path: Path) -> None:
    reference = _reference(data[SMALL], SMALL, tmp_path)
    config = _config(variant, SMALL, 2, seed, end_kill=True)
    locals_ = node_copies(data[SMALL], tmp_path / "nodes", 2)
    walk = run_walk(tmp_path / "walk", config, locals_)
    _check_walk(walk, config, reference, locals_)
    last = walk.segments[-1]
    assert (last.start, last.committed, last.steps) == (config.total_steps,) * 2 + ([],)


@pytest.mark.timeout(300)
def test_walk_killed_after_the_last_step(data: dict[int, Path], tmp_path: Path) -> None:
    """8 is killed at random, then 2 once every rank committed the epoch's last step (before
    the job ended): 8 resumes from the state at the epoch's end and delivers nothing more."""
    _walk_to_the_end("loader0", 4, data, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "variant", ["loader2-procs", "loader2-torch", "loader2", "dataset", "dataset-relative"]
)
def test_walk_killed_after_the_last_step_all_variants(
    variant: str, data: dict[int, Path], tmp_path: Path
) -> None:
    _walk_to_the_end(variant, 5, data, tmp_path)


# The slow walks: 100 kill points each, through every way of reading and several node layouts
# of the 8-rank and the 2-rank job.
_HUNDRED = [
    ("loader0", 10, ((2, 4), (1, 2))),
    ("loader2-procs", 11, ((4, 2), (2, 1))),
    ("loader2-torch", 12, ((8, 1), (2, 1))),
    ("dataset", 13, ((1, 8), (1, 2))),
    ("dataset-relative", 14, ((2, 4), (2, 1))),
    ("loader2", 15, ((2, 4), (1, 2))),
]


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(("variant", "seed", "layouts"), _HUNDRED)
def test_walk_100_kills(
    variant: str,
    seed: int,
    layouts: tuple[tuple[int, int], ...],
    data: dict[int, Path],
    tmp_path: Path,
) -> None:
    """100 kills: 8 -> 2 -> 8 -> ... -> 2, then 8 finishes the epoch."""
    reference = _reference(data[LARGE], LARGE, tmp_path)
    config = _config(variant, LARGE, 100, seed, layouts=layouts)
    locals_ = node_copies(data[LARGE], tmp_path / "nodes", max(n for n, _ in layouts))
    walk = run_walk(tmp_path / "walk", config, locals_)
    _check_walk(walk, config, reference, locals_)
