"""``StreamingDataset``: an elastically deterministic, resumable, streaming IterableDataset."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.dataset.args import (
    StreamDefaults,
    build_streams,
    check_settings,
    check_sources,
    checked_cache_limit,
    default_predownload,
    parse_epoch_size,
)
from streamx.dataset.array import Array
from streamx.dataset.attributes import LayoutField, SettingField
from streamx.dataset.cache_windows import CacheWindows
from streamx.dataset.iteration import SampleAccess, chunk_size, worker_samples
from streamx.dataset.layout import DatasetLayout
from streamx.dataset.manual_shards import ShardMembers
from streamx.dataset.pass_view import PassView, decodes_without_python
from streamx.dataset.reader_access import reader_access
from streamx.dataset.spanner import Spanner
from streamx.dataset.state_marks import with_resume_marks
from streamx.dataset.stream import Stream, apply_weights
from streamx.format.index import ShardInfo
from streamx.format.readers import make_reader
from streamx.order.epoch import plan_config, resample_streams
from streamx.order.epoch_state import EpochState
from streamx.order.mesh import Mesh, data_world, grouping
from streamx.order.settings import (
    BatchingMethod,
    EpochSettings,
    PartitionAlgo,
    SamplingMethod,
    ShuffleAlgo,
)
from streamx.order.world import World
from streamx.runtime import metrics
from streamx.runtime.overrides import overridden
from streamx.runtime.torch_bases import TorchIterableDataset

__all__ = ["UNCOUNTED_KEY", "StreamingDataset"]

# The key a skipped pipeline stage's loader state carries: it read nothing, so its count is
# not the run's position (mosaicml-streaming keeps and ignores unknown keys).
UNCOUNTED_KEY = "streamx_uncounted"


class StreamingDataset(
    Array,
    ShardMembers,
    CacheWindows,
    TorchIterableDataset,  # type: ignore[misc,type-arg]
):
    """A streaming, resumable dataset with mosaicml-streaming's sample order.

    Every argument keeps the name, meaning and default it has in mosaicml-streaming 0.13.0:

    Args:
        streams: Streams to mix; give either ``streams`` or ``remote``/``local``.
        remote: Remote directory or URL of a single stream.
        local: Local cache directory of a single stream.
        split: Sub-directory of ``remote`` and ``local``.
        download_retry: Total download attempts per file.
        download_timeout: Seconds allowed per download.
        validate_hash: Hash algorithm checked on download or decompression.
        keep_zip: Keep compressed files after decompressing.
        epoch_size: Samples per epoch (int or ``'100k'``), with relative stream weights.
        predownload: Samples each worker prepares ahead; default ``8 * batch_size`` or 64.
            The next shards of the order after that window are fetched too (4 by
            default, ``STREAMX_DOWNLOAD_SHARDS_AHEAD``), so their downloads run while the
            current shard is read.
        cache_limit: Byte limit of the shard cache (int or ``'10gb'``).
        sampling_method: ``'balanced'`` or ``'fixed'``.
        sampling_granularity: Samples taken from a shard at a time when subsampling.
        partition_algo: ``'orig'`` or ``'relaxed'``.
        num_canonical_nodes: Canonical node count of the sample order.
        batch_size: Per-device batch size; required to iterate.
        shuffle: Shuffle the samples.
        shuffle_algo: ``'py1e'``, ``'py1br'``, ``'py1s'``, ``'py2s'`` or ``'naive'``.
        shuffle_seed: Seed of every random choice.
        shuffle_block_size: Block size of ``py1e``/``py1br``.
        batching_method: ``'random'``, ``'stratified'``, ``'per_stream'`` or
            ``'device_per_stream'``.
        allow_unsafe_types: Allow ``pkl`` columns.
        replication: Consecutive ranks that see the same samples.
        mesh: The dp/tp/pp/cp sizes (:class:`streamx.order.mesh.Mesh`); only dp splits data.
            With ``Mesh(skip_pipeline_middle=True)`` the middle pipeline stages' passes
            yield and fetch nothing (their epochs and ``state_dict`` still advance).
        stream_name: Name of the Stream class to build when ``streams`` is not given.
        stream_config: Extra arguments for that class.
        zero_copy: Hand out ``bytes`` columns as read-only ``memoryview``s and static-shape
            ``ndarray`` columns as read-only arrays over the shard files' memory maps, with
            no copy (streamx's extension; views stay valid after their shard is evicted).

    Raises:
        ValueError: If the arguments are inconsistent or out of range (mosaicml-streaming's
            messages), an index is malformed, or ``cache_limit`` is too small.
        RuntimeError: If a stream holds no samples, or has neither a local ``index.json``
            nor a remote.

    Examples:
        >>> ds = StreamingDataset(local="/data/mds", batch_size=8, shuffle=True)  # doctest: +SKIP
        >>> ds.columns  # doctest: +SKIP
        {'id': 'int', 'text': 'str'}
        >>> for sample in ds:  # doctest: +SKIP
        ...     train_on(sample)
    """

    def __init__(
        self,
        *,
        streams: Sequence[Stream] | None = None,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        sampling_method: SamplingMethod = "balanced",
        sampling_granularity: int = 1,
        partition_algo: PartitionAlgo = "relaxed",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: ShuffleAlgo = "py1e",
        shuffle_seed: int = 9176,
        shuffle_block_size: int | None = None,
        batching_method: BatchingMethod = "random",
        allow_unsafe_types: bool = False,
        replication: int | None = None,
        stream_name: str = "stream",
        stream_config: dict[str, Any] | None = None,
        zero_copy: bool = False,
        mesh: Mesh | None = None,
    ) -> None:
        check_sources(streams, remote, local)
        self._settings = EpochSettings(
            batch_size=batch_size,
            shuffle=shuffle,
            shuffle_algo=shuffle_algo,
            shuffle_seed=shuffle_seed,
            shuffle_block_size=shuffle_block_size,
            num_canonical_nodes=num_canonical_nodes,
            initial_physical_nodes=None,
            partition_algo=partition_algo,
            batching_method=batching_method,
            sampling_method=sampling_method,
            sampling_granularity=sampling_granularity,
        )
        check_settings(self._settings)
        self.predownload: int | None = default_predownload(predownload, batch_size)
        epoch_size_value = parse_epoch_size(epoch_size)
        self.cache_limit: int | str | None = cache_limit
        self.allow_unsafe_types = allow_unsafe_types
        self.replication = replication
        self._unique_rank_world = World.detect()
        self.mesh, self._grouping = mesh, grouping(mesh, replication)
        self._parallel_rank_world = data_world(self._unique_rank_world, self._grouping)
        defaults = StreamDefaults(
            remote, local, split, download_retry, download_timeout, validate_hash, keep_zip
        )
        streams = build_streams(streams, defaults, stream_name, stream_config)
        self._load_shards(streams)
        if self.cache_limit:
            largest = int(self._layout.shards.max_sizes().max())
            self.cache_limit = checked_cache_limit(self.cache_limit, self._layout)
            self.max_shard_size_across_all_streams = largest
        self.epoch_size = apply_weights(
            self.streams, self.samples_per_stream, epoch_size_value, self.shuffle_seed
        )
        self.length = math.ceil(self.epoch_size / self._parallel_rank_world.num_ranks)
        self._reader = make_reader(self.shards, zero_copy=zero_copy)
        self._chunk = chunk_size(self._layout)
        # A remote too: the fast get answers None while the shard is not local, and the
        # general path (get_item) then fetches it; a local sample it reads as get_item's
        # first step does.
        self._enable_fast_get(StreamingDataset, self._reader.fast_get)
        self._state = EpochState.create(self._layout.local_dirs)
        self._open_shard_cache(zero_copy)

    # What the indexes say (fixed after construction), as mosaicml-streaming names it.
    streams: LayoutField[Sequence[Stream]] = LayoutField()
    shards: LayoutField[Sequence[ShardInfo]] = LayoutField()
    num_streams: LayoutField[int] = LayoutField()
    num_shards: LayoutField[int] = LayoutField()
    num_samples: LayoutField[int] = LayoutField()
    stream_per_shard: LayoutField[NDArray[np.int64]] = LayoutField()
    shard_offset_per_stream: LayoutField[NDArray[np.int64]] = LayoutField()
    shards_per_stream: LayoutField[NDArray[np.int64]] = LayoutField()
    samples_per_stream: LayoutField[NDArray[np.int64]] = LayoutField()
    sample_offset_per_stream: LayoutField[NDArray[np.int64]] = LayoutField()
    samples_per_shard: LayoutField[NDArray[np.int64]] = LayoutField()
    sample_offset_per_shard: LayoutField[NDArray[np.int64]] = LayoutField()

    # The order settings: num_canonical_nodes and shuffle_block_size are filled when an
    # epoch starts or a state dict is taken, as in mosaicml-streaming.
    batch_size: SettingField[int | None] = SettingField()
    shuffle: SettingField[bool] = SettingField()
    shuffle_algo: SettingField[ShuffleAlgo] = SettingField()
    shuffle_seed: SettingField[int] = SettingField()
    shuffle_block_size: SettingField[int | None] = SettingField()
    num_canonical_nodes: SettingField[int | None] = SettingField()
    initial_physical_nodes: SettingField[int | None] = SettingField()
    partition_algo: SettingField[PartitionAlgo] = SettingField()
    batching_method: SettingField[BatchingMethod] = SettingField()
    sampling_method: SettingField[SamplingMethod] = SettingField()
    sampling_granularity: SettingField[int] = SettingField()

    @property
    def epoch_seed_change(self) -> bool:
        """Whether stream subsampling changes with the epoch (shuffled, balanced sampling)."""
        return self._settings.epoch_seed_change

    def _load_shards(self, streams: Sequence[Stream]) -> None:
        metrics.begin_epoch(0)  # names the node's metrics directory before workers start
        self._layout = DatasetLayout.load(streams, self._unique_rank_world, self.allow_unsafe_types)

    def __len__(self) -> int:
        return self.length

    @property
    def size(self) -> int:
        """Number of unique underlying samples."""
        return self.num_samples

    @property
    def columns(self) -> dict[str, str]:
        """Column name -> encoding (``'int'``, ``'str'``, ``'jpeg'``, ...), in index order.

        Streams with different columns contribute all of theirs; where two declare the same
        name, the first stream's encoding is shown.

        Examples:
            >>> StreamingDataset(local="/data/mds", batch_size=8).columns  # doctest: +SKIP
            {'id': 'int', 'text': 'str'}
        """
        return self._layout.columns

    def __repr__(self) -> str:
        streams = [stream.remote or stream.local for stream in self.streams]
        settings = self._settings
        return (
            f"{type(self).__name__}(streams={streams}, samples={self.num_samples}, "
            f"shards={self.num_shards}, epoch_size={self.epoch_size}, columns={self.columns}, "
            f"batch_size={settings.batch_size}, shuffle={settings.shuffle}, "
            f"shuffle_algo={settings.shuffle_algo!r}, shuffle_seed={settings.shuffle_seed}, "
            f"num_canonical_nodes={settings.num_canonical_nodes}, "
            f"partition_algo={settings.partition_algo!r}, "
            f"batching_method={settings.batching_method!r}, "
            f"sampling_method={settings.sampling_method!r}, cache_limit={self.cache_limit!r})"
        )

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        """Returns sample ``sample_id``, fetching its shard first if it is not local."""
        sample = self._reader.get_if_local(sample_id)
        if sample is not None:
            return sample
        if self._shard_cache is None:  # no remote: the user's own file is missing
            return self._reader.get(sample_id)  # raises FileNotFoundError naming it
        shard = self._shard_of(sample_id)
        if self._ranges is not None:  # a shard still downloading serves it by range
            sample = self._ranges.get(sample_id, shard)
            if sample is not None:
                return sample
        for _attempt in range(retry):
            with self._shard_cache.hold(shard):  # not evicted between download and read
                self._shard_cache.prepare(shard)
                sample = self._reader.get_if_local(sample_id)
                if sample is not None:
                    return sample
                # Deleted by hand since: fetch it again.
        raise RuntimeError(
            f"StreamingDataset repeatedly failed to download a shard for sample {sample_id}. "
            f"If `cache_limit` ({self.cache_limit}) is set, it may be too low for the number "
            "of shards in use at once; raise it."
        )

    @property
    def cache_usage(self) -> int:
        """Bytes counted against ``cache_limit`` on this node: the index files plus every
        downloaded shard (files of streams without a remote are not cache and not counted)."""
        if self._shard_cache is not None:
            return self._shard_cache.usage()
        return sum(stream.get_index_size() for stream in self.streams)

    @property
    def next_epoch(self) -> int:
        """The epoch the next ``__iter__`` starts (shared by every process on the node)."""
        return self._state.next_epoch

    @next_epoch.setter
    def next_epoch(self, epoch: int) -> None:
        self._state.next_epoch = epoch

    def _sample_access(self) -> SampleAccess:
        """Chunked decoding in Rust, unless a subclass overrides ``__getitem__`` or
        ``get_item``: then every id goes through ``ds[i]``, as in mosaicml-streaming."""
        hooks = overridden(type(self), StreamingDataset, ("__getitem__", "get_item"))
        return reader_access(
            self._reader,
            self._ranges,
            get_one=self.__getitem__,
            get_item=self.get_item,
            prepare=self._prepare_ahead,
            settle=self._settle_downloads,
            chunk=self._chunk,
            overridden=bool(hooks),
        )

    def _read_many(self, ids: list[int]) -> list[Any] | None:
        """The samples at ``ids`` as a pass reads a chunk (downloading, or reading by range,
        any not local yet); ``None`` where a subclass overrides ``__getitem__`` or
        ``get_item``."""
        get_many = self._sample_access().get_many
        return None if get_many is None else list(get_many(ids))

    def __iter__(self) -> Iterator[Any]:
        """Yields this worker's samples of the next epoch, in mosaicml-streaming's order.

        The epoch is claimed here, not at the first ``next``: a DataLoader worker calls
        ``iter`` as it starts, so a worker shut down before it fetches anything (a pass cut
        short) still moves on to the next epoch with its siblings.
        """
        claimed = self.claim_pass()
        return worker_samples(claimed.start, claimed.layout, claimed.world, claimed.access)

    def claim_pass(self) -> PassView:
        """Claims this worker's next epoch, as ``iter`` does, and returns the pass, frozen:
        what a loader walks it with (:mod:`streamx.torch` reads nothing private here)."""
        start = self._state.start_epoch(self._settings, self._parallel_rank_world.num_nodes)
        self._settings = start.settings
        access = self._sample_access()
        world = World.detect()  # detected once per pass
        if self.mesh is not None and not self.mesh.reads_data(world.rank):
            access = replace(access, idle=True)  # a middle pipeline stage: the epoch only
        world = data_world(world, self._grouping)
        return PassView(start, self._layout, world, access, self._reader.evict)

    @property
    def decodes_without_python(self) -> bool:
        """Whether every sample decodes in Rust (numpy for ``ndarray`` columns) with no hook
        of a subclass's to honour: a loader may then read batches column by column itself."""
        hooks = overridden(type(self), StreamingDataset, ("__iter__", "__getitem__", "get_item"))
        return decodes_without_python(self._reader, bool(hooks))

    def begin_loader_pass(self) -> None:
        """Marks the start of a DataLoader's pass: the workers it starts agree on its epoch
        through this mark."""
        self._state.begin_pass()

    def end_loader_pass(self) -> None:
        """Marks the end of a DataLoader's pass, once its workers are gone: they end by
        ``os._exit``, so the pins and owner files they left in the node's cache ledger are
        released here rather than by the next process that opens it."""
        if self._shard_cache is not None:
            self._shard_cache.ledger.recover()

    def state_dict(self, num_samples: int, from_beginning: bool) -> dict[str, Any]:
        """Returns the five-key resumption state after ``num_samples`` global samples, with
        py1e's resume marks where this node's count cache holds the epoch's draws."""
        nodes = self._parallel_rank_world.num_nodes
        start = self._state.resolve(self.next_epoch - 1, self._settings, nodes)
        self._settings = start.settings
        state = start.state_dict(num_samples, from_beginning, nodes)
        return dict(with_resume_marks(state, self._layout, start.settings))

    def load_state_dict(self, obj: Mapping[str, object]) -> None:
        """Stores a resumption state; the next ``__iter__`` of every worker picks it up.

        Raises:
            ValueError: If ``obj`` lacks ``epoch``, ``sample_in_epoch``,
                ``num_canonical_nodes`` or ``shuffle_seed``; or if it is the loader state
                of a pipeline stage that reads no data (its sample count is not the run's)
                and this rank reads data.
        """
        uncounted = obj.get(UNCOUNTED_KEY)
        if uncounted is not None and (
            self.mesh is None or self.mesh.reads_data(World.detect().rank)
        ):
            raise ValueError(
                f"state dict {UNCOUNTED_KEY!r}: {uncounted}, so its 'sample_in_epoch' counts "
                "nothing of the run; resuming from it here would start the epoch over. Load "
                "the loader state of a rank that reads data (such as global rank 0)."
            )
        self._state.load_state_dict(obj)

    def resample_streams(
        self, epoch: int, stream_id: int | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Returns the epoch's ``(shuffle_units, sample_ids)`` after stream weighting."""
        settings = self._settings.resolve(None, self._parallel_rank_world.num_nodes)
        config = plan_config(self._layout.plan_streams(), settings, epoch, 0, World(1, 1, 0))
        return resample_streams(config, stream_id)

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is not None:
            state.close()

    # Shard-level members of mosaicml-streaming's StreamingDataset: `spanner` here, the rest
    # in `manual_shards.ShardMembers`.

    @functools.cached_property
    def spanner(self) -> Spanner:
        """Maps a global sample id to ``(shard id, id within the shard)``.

        Examples:
            >>> shard_id, index_in_shard = dataset.spanner[1234]  # doctest: +SKIP
        """
        return Spanner(self.samples_per_shard)
