"""Hostile Parquet footers: counts and offsets a writer never produces, patched into real
files, are refused with an error naming the file (and row group) before anything is sized
from them."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import table
from thrift_compact import Struct, patch_footer

from streamx import StreamingDataset
from streamx.convert import ConvertError, convert
from streamx.dataset.parquet_stream import ParquetStream
from streamx.exceptions import CorruptShardError
from streamx.format.parquet.footer_bounds import MAX_GROUP_ROWS, check_row_counts

Edit = Callable[[Struct], None]

# FileMetaData field ids (parquet.thrift): 3 num_rows, 4 row_groups; RowGroup: 1 columns,
# 3 num_rows; ColumnChunk: 3 meta_data; ColumnMetaData: 7 total_compressed_size,
# 9 data_page_offset, 11 dictionary_page_offset.
_ROWS, _GROUPS, _COLUMNS, _META = 3, 4, 1, 3
_SIZE, _DATA_PAGE, _DICT_PAGE = 7, 9, 11


def _parquet(rows: int = 50, group: int = 10, data: pa.Table | None = None) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table(rows) if data is None else data, buf, row_group_size=group)
    return buf.getvalue()


def _group_rows(counts: dict[int, int], total: int | None = None) -> Edit:
    """Sets row groups' counts; the file's total to their new sum unless ``total`` is given."""

    def edit(md: Struct) -> None:
        groups = md.structs(_GROUPS)
        for number, rows in counts.items():
            groups[number].put(_ROWS, rows)
        summed = 0
        for g in groups:
            found = g.get(_ROWS)
            assert isinstance(found, int)
            summed += found
        md.put(_ROWS, summed if total is None else total)

    return edit


def _file_rows(total: int) -> Edit:
    return lambda md: md.put(_ROWS, total)


def _chunk(group: int, field: int, value: int) -> Edit:
    """Sets a field of column 0's metadata ('id') in row group ``group``."""

    def edit(md: Struct) -> None:
        md.structs(_GROUPS)[group].structs(_COLUMNS)[0].struct(_META).put(field, value)

    return edit


def _open(path: Path | str, local: Path, **kwargs: Any) -> StreamingDataset:
    return StreamingDataset(streams=[ParquetStream(remote=str(path), local=str(local), **kwargs)])


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


COUNTS: list[tuple[str, Edit, str]] = [
    ("total-huge", _file_rows(10**12), r"row groups hold 50 rows, its total says 1000000000000"),
    ("total-negative", _file_rows(-1), r"the Parquet footer claims -1 rows"),
    # Lowered, pyarrow would read 5 rows of 10 and drop the rest: only the sum tells.
    ("group-lowered", _group_rows({1: 5}, total=50), r"row groups hold 45 rows, its total says 50"),
    ("group-negative", _group_rows({2: -1}), r"h\.parquet row group 2: .*claims -1 rows"),
    ("group-huge", _group_rows({3: 10**12}), r"h\.parquet row group 3: .*claims 1000000000000"),
    ("group-2**31", _group_rows({0: 2**31}), r"h\.parquet row group 0: .*claims 2147483648 rows"),
]


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in COUNTS], ids=[c[0] for c in COUNTS])
def test_row_counts_refused(tmp_path: Path, edit: Edit, message: str) -> None:
    path = _write(tmp_path / "d" / "h.parquet", patch_footer(_parquet(), edit))
    with pytest.raises(CorruptShardError, match=r"h\.parquet") as caught:
        _open(path, tmp_path / "c")
    assert caught.match(message)


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in COUNTS], ids=[c[0] for c in COUNTS])
def test_convert_refuses_hostile_row_counts(tmp_path: Path, edit: Edit, message: str) -> None:
    """``streamx convert`` reads row groups with pyarrow, which would drop the rows of a
    lowered count in silence: it checks the same counts first, and writes nothing."""
    path = _write(tmp_path / "d" / "h.parquet", patch_footer(_parquet(), edit))
    out = tmp_path / "mds"
    with pytest.raises(ConvertError, match=r"h\.parquet") as caught:
        convert(str(path), str(out), progress=False, num_workers=1)
    assert caught.match(message)
    assert not (out / "index.json").exists()


def test_file_total_past_2_40_refused(tmp_path: Path) -> None:
    # 600 row groups of one row, each claiming the most a row group may hold: 1.3e12 rows.
    data = _parquet(data=pa.table({"id": list(range(600))}), group=1)
    edit = _group_rows(dict.fromkeys(range(600), MAX_GROUP_ROWS))
    path = _write(tmp_path / "d" / "h.parquet", patch_footer(data, edit))
    with pytest.raises(CorruptShardError, match=r"h\.parquet: the Parquet footer claims \d+ rows"):
        _open(path, tmp_path / "c")


def test_largest_row_group_is_within_bounds() -> None:
    data = patch_footer(_parquet(), _group_rows({0: MAX_GROUP_ROWS}))
    check_row_counts(pq.read_metadata(io.BytesIO(data)), "ok.parquet")


def test_hostile_file_named_beside_a_good_one(tmp_path: Path) -> None:
    _write(tmp_path / "d" / "a.parquet", _parquet())
    _write(tmp_path / "d" / "b.parquet", patch_footer(_parquet(), _group_rows({4: -7})))
    with pytest.raises(CorruptShardError, match=r"b\.parquet row group 4: .*claims -7 rows"):
        _open(tmp_path / "d", tmp_path / "c")


CHUNKS: list[tuple[str, Edit]] = [
    ("size-past-end", _chunk(1, _SIZE, 10**12)),
    ("size-negative", _chunk(1, _SIZE, -10)),
    ("data-page-past-end", _chunk(1, _DATA_PAGE, 10**9)),
    ("data-page-negative", _chunk(1, _DATA_PAGE, -3)),
    ("dictionary-page-past-end", _chunk(1, _DICT_PAGE, 10**9)),
    ("dictionary-page-in-magic", _chunk(1, _DICT_PAGE, 1)),
]


@pytest.mark.parametrize("edit", [c[1] for c in CHUNKS], ids=[c[0] for c in CHUNKS])
@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filtered-on-it"])
def test_column_chunk_outside_the_file_refused(tmp_path: Path, edit: Edit, filtered: bool) -> None:
    path = _write(tmp_path / "d" / "h.parquet", patch_footer(_parquet(), edit))
    # Filtered on 'id' but not reading it: the filter's chunks are checked before fetching.
    kwargs: dict[str, Any] = (
        {"columns": ["text"], "filters": [("id", ">", 3)]} if filtered else {"columns": ["id"]}
    )
    match = r"h\.parquet row group 1: column 'id': the footer puts its chunk at"
    with pytest.raises(CorruptShardError, match=match):
        _open(path, tmp_path / "c", **kwargs)


def test_chunk_of_an_unread_column_is_not_checked(tmp_path: Path) -> None:
    path = _write(tmp_path / "d" / "h.parquet", patch_footer(_parquet(), _chunk(1, _SIZE, -10)))
    ds = _open(path, tmp_path / "c", columns=["text"])
    assert [ds[i]["text"] for i in (0, 15, 49)] == ["row 0", "row 15", "row 49"]


def _footer_length(length: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:-8] + length.to_bytes(4, "little") + data[-4:]


LENGTHS: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("past-the-file", _footer_length(2**32 - 1), r"truncated Parquet footer \(4294967295 bytes"),
    ("just-past", lambda d: _footer_length(len(d) - 11)(d), r"truncated Parquet footer"),
    ("zero", _footer_length(0), r"the Parquet footer is empty"),
]


@pytest.mark.parametrize(
    ("patch", "message"), [c[1:] for c in LENGTHS], ids=[c[0] for c in LENGTHS]
)
def test_footer_length_refused(
    tmp_path: Path, patch: Callable[[bytes], bytes], message: str
) -> None:
    path = _write(tmp_path / "d" / "h.parquet", patch(_parquet()))
    with pytest.raises(CorruptShardError, match=r"h\.parquet: " + message):
        _open(path, tmp_path / "c")


@pytest.mark.remote
def test_s3_hostile_footers_refused(s3: Any, tmp_path: Path) -> None:
    s3.put("h/rows.parquet", patch_footer(_parquet(), _group_rows({2: 10**12})))
    s3.put("h/chunk.parquet", patch_footer(_parquet(), _chunk(1, _SIZE, 10**12)))
    s3.put("h/length.parquet", _footer_length(2**32 - 1)(_parquet()))
    cases = [
        ("rows", r"h/rows\.parquet row group 2: the Parquet footer claims 1000000000000"),
        ("chunk", r"h/chunk\.parquet row group 1: column 'id'"),
        ("length", r"h/length\.parquet: truncated Parquet footer"),
    ]
    for name, message in cases:
        with pytest.raises(CorruptShardError, match=message):
            _open(s3.url(f"h/{name}.parquet"), tmp_path / name)


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    served = tmp_path / "served"
    _write(served / "rows.parquet", patch_footer(_parquet(), _file_rows(10**12)))
    _write(served / "chunk.parquet", patch_footer(_parquet(), _chunk(2, _DATA_PAGE, 10**9)))
    _write(served / "length.parquet", _footer_length(2**32 - 1)(_parquet()))
    with Nginx(served) as server:
        yield server


def test_http_hostile_footers_refused(nginx: Nginx, tmp_path: Path) -> None:
    cases = [
        ("rows", r"rows\.parquet: the Parquet footer's row groups hold 50 rows"),
        ("chunk", r"chunk\.parquet row group 2: column 'id'"),
        ("length", r"length\.parquet: truncated Parquet footer"),
    ]
    for name, message in cases:
        with pytest.raises(CorruptShardError, match=message):
            _open(f"{nginx.endpoint}/{name}.parquet", tmp_path / name)
