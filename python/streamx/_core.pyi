"""Type stubs for the Rust extension ``streamx._core``. Users never import it directly."""

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, final

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self

from streamx.cli.ledger_types import LedgerSnapshot
from streamx.order.settings import PlanConfig

__version__: str

def compression_names() -> list[str]: ...
def hash_names() -> list[str]: ...
def is_compression(spec: str) -> bool: ...
def compression_extension(spec: str) -> str: ...
def compress(spec: str, data: bytes) -> bytes: ...
def decompress(spec: str, data: bytes) -> bytes: ...
def decompress_file(
    spec: str, zip_path: str, raw_path: str, max_bytes: int | None = None
) -> int: ...
def hexdigest(algo: str, data: bytes) -> str: ...
def hash_file(algo: str, path: str) -> str: ...
def verify_file(algo: str, path: str, expected: str) -> None: ...
def socket_to_file(
    sock: int, file: int, offset: int, length: int, seconds: float
) -> tuple[int, Literal["complete", "closed", "timeout"]]: ...
def ranged_get(
    sock: int,
    file: int,
    request: bytes,
    offset: int,
    length: int,
    expected: int | None,
    seconds: float,
) -> tuple[_GetOutcome, tuple[list[tuple[str, str]], bytes, bool] | None]: ...

# A ranged GET's first step: "head" when the answer was accepted, its body pending.
_HeadStep = tuple[
    Literal["head", "declined", "stale", "head-timeout"],
    int,
    int | None,
    bool,
    int,
]
_GetOutcome = tuple[
    Literal["complete", "closed", "timeout", "declined", "stale", "head-timeout"],
    int,
    int | None,
    bool,
    int,
]

# (outcome, status, header fields in the order sent, reusable) of a HEAD.
_HeadOutcome = tuple[Literal["complete", "stale", "head-timeout"], int, list[tuple[str, str]], bool]

@final
class TlsClientConfig:
    def __new__(cls, bundles: list[tuple[str, str]]) -> TlsClientConfig: ...

@final
class TlsStream:
    def __new__(cls, config: TlsClientConfig, host: str, sock: int) -> TlsStream: ...
    def handshake(self, seconds: float) -> str | None: ...
    def ranged_get(
        self,
        file: int,
        request: bytes,
        offset: int,
        length: int,
        expected: int | None,
        seconds: float,
    ) -> _GetOutcome: ...
    def ranged_head(
        self, request: bytes, offset: int, length: int, expected: int | None, seconds: float
    ) -> _HeadStep: ...
    def pending_body(self, file: int) -> _GetOutcome: ...
    def whole_get(
        self,
        file: int,
        request: bytes,
        expected: int | None,
        most: int | None,
        seconds: float,
    ) -> _GetOutcome: ...
    def version(self) -> tuple[str | None, str | None]: ...
    def declined_page(self) -> tuple[list[tuple[str, str]], bytes, bool] | None: ...
    def head(self, request: bytes, seconds: float) -> _HeadOutcome: ...

def tls_bodies_moved() -> int: ...
def exception_names() -> list[str]: ...
def mds_encoding_names() -> list[str]: ...
def native_encoding_names() -> list[str]: ...
def ndarray_dtype_codes() -> list[tuple[str, int]]: ...

_Warnings = list[tuple[str, bool]]

def plan_epoch(config: PlanConfig) -> tuple[NDArray[np.int64], _Warnings]: ...
def plan_worker(
    config: PlanConfig, node: int, rank: int, worker: int
) -> tuple[NDArray[np.int64], _Warnings]: ...

@final
class WorkerPieces:
    """One worker's ids of an epoch (``plan_worker``'s array), handed out in pieces."""

    def next_piece(self, max_len: int) -> NDArray[np.int64]: ...
    def __len__(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def lazy(self) -> bool: ...
    @property
    def count_cache_stats(self) -> tuple[int, int, str | None] | None:
        """``(canonical nodes read from the count cache, nodes written to it, why a file
        found was not used or none could be written)``; ``None`` without a cache or where
        no shuffle but naive is planned in pieces."""
    @property
    def resume_marks_nodes(self) -> int:
        """Canonical nodes the resume marks given were valid for (0 without marks)."""

def plan_worker_pieces(
    config: PlanConfig,
    node: int,
    rank: int,
    worker: int,
    *,
    count_cache_dir: str | os.PathLike[str] | None = None,
    count_cache_min_samples: int = 0,
    resume_marks: bytes | None = None,
) -> tuple[WorkerPieces, _Warnings]: ...
def py1e_resume_marks(
    config: PlanConfig, count_cache_dir: str | os.PathLike[str]
) -> bytes | None: ...
def py1e_count_every_node(
    config: PlanConfig, count_cache_dir: str | os.PathLike[str], count_cache_min_samples: int
) -> tuple[int, int, str | None] | None: ...
def py1e_count_every_node_in_background(
    config: PlanConfig, count_cache_dir: str | os.PathLike[str], count_cache_min_samples: int
) -> bool: ...
def get_shuffle(
    algo: str,
    shard_sizes: Sequence[int],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
) -> tuple[NDArray[np.int64], _Warnings]: ...
def get_partitions(
    algo: str,
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> tuple[NDArray[np.int64], _Warnings]: ...
def get_sampling(
    samples_per_shard: Sequence[int],
    choose: int,
    granularity: int,
    seed: int,
    epoch: int,
    use_epoch: bool,
) -> NDArray[np.int64]: ...
def resample_streams(
    config: PlanConfig, stream_id: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]: ...

@final
class MDSShardWriter:
    """Frames samples into MDS shards in memory; a background thread hashes, compresses and
    writes each finished shard file atomically."""

    def __new__(
        cls,
        dirname: str,
        column_names: Sequence[str],
        column_kinds: Sequence[str],
        column_sizes: Sequence[int | None],
        config_json: bytes,
        size_limit: int | None,
        compression: str | None,
        hashes: Sequence[str],
    ) -> Self: ...
    def write(self, sample: dict[str, Any]) -> bool: ...
    def write_encoded(self, sample: bytes) -> bool: ...
    def flush(self) -> bool: ...
    def drain(self) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
    def pending_shard_bytes(self) -> bytes: ...
    @property
    def num_shards(self) -> int: ...
    @property
    def num_samples(self) -> int: ...
    @property
    def pending_samples(self) -> int: ...

@final
class GrowingDecompressor:
    """Decompresses a compressed shard file while it downloads."""

    def __new__(cls, spec: str, raw_path: str, max_bytes: int | None = None) -> Self: ...
    @staticmethod
    def streams(spec: str) -> bool: ...
    def advance(self, zip_path: str, available: int) -> None: ...
    def finish(self, zip_path: str, total: int) -> int: ...
    def abort(self) -> None: ...

@final
class MappedShard:
    def __new__(cls, path: str) -> Self: ...
    def array(self) -> NDArray[np.uint8]: ...
    @property
    def changed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    def __len__(self) -> int: ...

@final
class MDSReader:
    """Random access to the samples of many MDS shards through memory maps."""

    def __new__(
        cls,
        shards: Sequence[tuple[str, str | None, str | None, int, int, int | None]]
        | Sequence[tuple[ShardIndex, str, int]],
        schemas: Sequence[tuple[Sequence[str], Sequence[str], Sequence[int | None]]],
    ) -> Self: ...
    def __len__(self) -> int: ...
    @property
    def num_samples(self) -> int: ...
    def get(self, index: int) -> dict[str, Any]: ...
    def get_item(self, index: int) -> dict[str, Any]: ...
    def get_many(self, indices: Sequence[int]) -> list[dict[str, Any]]: ...
    def gather(
        self,
        indices: list[int],
        columns: list[int],
        outs: list[NDArray[np.uint8]],
        listed: list[int] = ...,
    ) -> list[list[Any]]: ...
    # The same reads, answering None while a shard is not on local disk (no exception).
    def get_if_local(self, index: int) -> dict[str, Any] | None: ...
    def get_item_if_local(self, index: int) -> dict[str, Any] | None: ...
    def get_many_if_local(self, indices: Sequence[int]) -> list[dict[str, Any]] | None: ...
    def gather_if_local(
        self,
        indices: list[int],
        columns: list[int],
        outs: list[NDArray[np.uint8]],
        listed: list[int] = ...,
    ) -> list[list[Any]] | None: ...
    def sample_bytes(self, index: int) -> bytes: ...
    def locate(self, index: int) -> tuple[int, int]: ...
    def evict(self, shard: int) -> None: ...
    @property
    def schema_ids(self) -> list[int]: ...
    def schema_id(self, shard: int) -> int: ...

_IndexFile = tuple[str, int, list[tuple[str, str]]]

@final
class ShardIndex:
    """The shard entries of one ``index.json``, checked and kept as compact columns."""

    @staticmethod
    def read(path: str) -> ShardIndex | str:
        """Reads the index at ``path``; a str is the JSON parser's message for bad JSON."""
    @staticmethod
    def parse(data: bytes, shown: str) -> ShardIndex | str:
        """Reads an index held in ``data``; ``shown`` names it in errors."""
    @staticmethod
    def _from_state(state: bytes) -> ShardIndex: ...
    def __len__(self) -> int: ...
    def samples(self) -> NDArray[np.int64]: ...
    def max_sizes(self) -> NDArray[np.int64]: ...
    def raw_sizes(self) -> NDArray[np.int64]: ...
    def schema_ids(self) -> NDArray[np.int64]: ...
    def schemas(self) -> list[tuple[list[str], list[str], list[int | None]] | None]: ...
    def formats(self) -> list[str]: ...
    def file_dirs(self) -> list[str]:
        """The distinct directory parts of the shards' file names (``""``: the top)."""
    def shards_with(self, found: Sequence[tuple[str, str]]) -> list[int]:
        """The shards with a file named by one of ``found``'s ``(directory part, name)``."""
    def entry(
        self, shard: int
    ) -> tuple[
        str,
        str | None,
        list[str],
        int,
        int | None,
        _IndexFile | None,
        _IndexFile | None,
        _IndexFile | None,
        _IndexFile | None,
        int,
        str,
    ]: ...

@final
class CacheLedger:
    """The node-wide shard cache ledger shared by every process using one cache directory."""

    def __new__(
        cls,
        path: str,
        num_shards: int,
        limit: int | None = None,
        shard_files: Sequence[Sequence[str]] | None = None,
        shard_sizes: Sequence[Sequence[int]] | None = None,
        indexed: Sequence[tuple[ShardIndex, int, Mapping[str, str]]] | None = None,
    ) -> Self: ...
    def files_manifest(self) -> bytes:
        """Every shard's registered files and sizes, as the manifest ``streamx cache`` reads."""
    def held_shards(self) -> list[int]:
        """The shards that are local or being prepared, in order."""
    @property
    def path(self) -> str: ...
    @property
    def num_shards(self) -> int: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def usage(self) -> int: ...
    def begin_download(
        self, shard: int, nbytes: int, must_fit: bool = False
    ) -> tuple[str, list[int]]: ...
    def finish_download(self, shard: int, nbytes: int) -> None: ...
    def abort_download(self, shard: int) -> None: ...
    def touch(self, shard: int) -> None: ...
    def pin(self, shard: int) -> bool: ...
    def unpin(self, shard: int) -> None: ...
    def state(self, shard: int) -> str: ...
    def bytes(self, shard: int) -> int: ...
    def pins(self, shard: int) -> int: ...
    def set_evictable(self, start: int, stop: int, evictable: bool) -> None: ...
    def sync(self, shard: int, nbytes: int | None = None) -> bool: ...
    def evict(self, shard: int) -> int | None: ...
    def evict_coldest(self) -> int | None: ...
    def trim_to_limit(self) -> list[int]: ...
    def recover(self) -> tuple[int, int]: ...

def ledger_snapshot(path: str) -> LedgerSnapshot: ...

# Token packing (streamx.packing): best-fit-decreasing bins of documents by length.
def pack_best_fit(lengths: NDArray[np.uint64], capacity: int) -> tuple[NDArray[np.uint32], int]: ...

# Tar header scan (streamx.format.webdataset.tar_members): (name, offset, size) per regular
# file; CorruptShardError names the tar and the header's offset.
def scan_tar_file(
    path: str | os.PathLike[str],
    size: int,
    shown: str,
    min_window: int,
    max_window: int,
    skip: int,
) -> list[tuple[str, int, int]]: ...
def scan_tar_table(
    path: str | os.PathLike[str],
    size: int,
    shown: str,
    min_window: int,
    max_window: int,
    skip: int,
) -> tuple[int, int, int, bytes] | None: ...

@final
class TarMembers:
    def __new__(
        cls,
        read: Callable[[int, int], bytes],
        size: int,
        shown: str,
        min_window: int,
        max_window: int,
        skip: int,
    ) -> TarMembers: ...
    def __iter__(self) -> TarMembers: ...
    def __next__(self) -> tuple[str, int, int]: ...

def parquet_whole_pages(
    prefix: bytes, chunk_length: int
) -> tuple[list[int], list[int], int | None]: ...
def parquet_offset_index_spans(
    metadata: bytes, row_group: int, file_size: int
) -> list[tuple[int, int] | None]: ...
def parquet_page_encoding(page: bytes) -> int: ...
def parquet_page_locations(
    index: bytes, chunk_start: int, chunk_length: int, rows: int
) -> list[tuple[int, int, int]]: ...

@final
class ReadBuffer:
    """A buffer reused from one row group's read to the next (one per reading thread)."""

    def __init__(self) -> None: ...
    def read(
        self, fd: int, spans: list[tuple[int, int]], label: str
    ) -> tuple[int, int, int] | None: ...
    def __len__(self) -> int: ...

@final
class ParquetRows:
    """A row group's flat column chunks decoded by the core, one row handed out at a time."""

    @staticmethod
    def decode(
        data: bytes,
        chunks: list[tuple[str, int, int, int, int, int, str]],
        rows: int,
        label: str,
    ) -> ParquetRows | None: ...
    @staticmethod
    def decode_buffer(
        buffer: ReadBuffer,
        chunks: list[tuple[str, int, int, int, int, int, str]],
        rows: int,
        label: str,
    ) -> ParquetRows | None: ...
    def row(self, index: int) -> dict[str, Any]: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...
