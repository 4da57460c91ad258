"""The settings an epoch's sample order is computed from, as typed values.

``EpochSettings`` starts as what the user passed to ``StreamingDataset``. mosaicml-streaming
fills ``num_canonical_nodes`` and ``shuffle_block_size`` when an epoch starts (or a state dict
is resolved), and a loaded state dict overrides the seed and node counts; :meth:`resolve`
does the same, returning a new value instead of writing onto the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypedDict, get_args

if TYPE_CHECKING:
    # typing has NotRequired from Python 3.11 on; the wheel supports 3.10, and the
    # annotations are never evaluated at run time (postponed, see the __future__ import).
    from typing import NotRequired

__all__ = [
    "BATCHING_METHODS",
    "PARTITION_ALGOS",
    "SAMPLING_METHODS",
    "SHUFFLE_ALGOS",
    "BatchingMethod",
    "EpochSettings",
    "PartitionAlgo",
    "PlanConfig",
    "PlanStream",
    "ResumeState",
    "SamplingMethod",
    "ShuffleAlgo",
]

ShuffleAlgo = Literal["py1e", "py1br", "py1s", "py2s", "naive"]
PartitionAlgo = Literal["orig", "relaxed"]
BatchingMethod = Literal["random", "stratified", "per_stream", "device_per_stream"]
SamplingMethod = Literal["balanced", "fixed"]

SHUFFLE_ALGOS: tuple[ShuffleAlgo, ...] = get_args(ShuffleAlgo)
PARTITION_ALGOS: tuple[PartitionAlgo, ...] = get_args(PartitionAlgo)
BATCHING_METHODS: tuple[BatchingMethod, ...] = get_args(BatchingMethod)
SAMPLING_METHODS: tuple[SamplingMethod, ...] = get_args(SamplingMethod)

# One stream as the planner takes it: (samples per shard, samples drawn per epoch, proportion).
PlanStream = tuple[list[int], int, float]


class ResumeState(TypedDict):
    """The state dict ``StreamingDataset.state_dict`` returns and ``load_state_dict`` takes."""

    epoch: int
    sample_in_epoch: int
    num_canonical_nodes: int
    shuffle_seed: int
    # Absent from the state dicts of old mosaicml-streaming versions.
    initial_physical_nodes: NotRequired[int | None]
    # streamx only (``streamx.order.resume_marks``): mosaicml-streaming keeps it, unused.
    streamx_py1e_marks: NotRequired[str]


class PlanConfig(TypedDict):
    """Everything that determines one epoch's order, as ``_core.plan_epoch`` takes it."""

    streams: list[PlanStream]
    seed: int
    epoch: int
    shuffle: bool
    shuffle_algo: ShuffleAlgo
    shuffle_block_size: int
    num_canonical_nodes: int
    partition_algo: PartitionAlgo
    batching_method: BatchingMethod
    batch_size: int
    # (nodes, ranks per node, workers per rank)
    world: tuple[int, int, int]
    sample_in_epoch: int
    initial_physical_nodes: int | None
    sampling_method: SamplingMethod
    sampling_granularity: int


@dataclass(frozen=True)
class EpochSettings:
    """The dataset arguments that shape the sample order, and the defaults filled per epoch.

    ``num_canonical_nodes`` and ``shuffle_block_size`` are ``None`` until :meth:`resolve`
    fills them, as the same attributes of mosaicml-streaming's dataset are.
    """

    batch_size: int | None
    shuffle: bool
    shuffle_algo: ShuffleAlgo
    shuffle_seed: int
    shuffle_block_size: int | None
    num_canonical_nodes: int | None
    initial_physical_nodes: int | None
    partition_algo: PartitionAlgo
    batching_method: BatchingMethod
    sampling_method: SamplingMethod
    sampling_granularity: int

    @property
    def epoch_seed_change(self) -> bool:
        """Whether the stream subsampling changes with the epoch."""
        return self.shuffle and self.sampling_method == "balanced"

    def resolved_sizes(self) -> tuple[int, int]:
        """``(num_canonical_nodes, shuffle_block_size)`` of resolved settings.

        Raises:
            RuntimeError: If :meth:`resolve` has not filled them.
        """
        ncn, block = self.num_canonical_nodes, self.shuffle_block_size
        if ncn is None or block is None:
            raise RuntimeError("Epoch settings must be resolved before an epoch is planned")
        return ncn, block

    def resolve(self, state: ResumeState | None, num_nodes: int) -> EpochSettings:
        """The settings an epoch runs with.

        A loaded ``state`` sets the canonical node count, seed and initial node count; a
        missing canonical node count defaults from ``num_nodes`` (64 per node for ``py1s``
        and ``py2s``). ``shuffle_block_size`` is derived once and then kept, as upstream does.

        Args:
            state: The resumption state in force, or ``None``.
            num_nodes: Physical nodes of the (replicated) world.
        """
        settings = self
        if state is not None:
            settings = replace(
                settings,
                num_canonical_nodes=int(state["num_canonical_nodes"]),
                shuffle_seed=int(state["shuffle_seed"]),
                initial_physical_nodes=state.get("initial_physical_nodes"),
            )
        elif not settings.num_canonical_nodes:
            factor = 64 if settings.shuffle_algo in ("py1s", "py2s") else 1
            settings = replace(settings, num_canonical_nodes=factor * num_nodes)
        if settings.shuffle_block_size is None:
            ncn = settings.num_canonical_nodes
            block = max(4_000_000 // ncn, 1 << 18) if ncn else 1 << 18
            settings = replace(settings, shuffle_block_size=block)
        return settings
