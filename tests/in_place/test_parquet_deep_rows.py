"""A row deep in a remote row group, served before the row group arrives from the one data
page of each column chunk that holds it, where the file carries an offset index
(``format/parquet/deep_pages.py``): nginx serves the file, and its access log shows the
ranges read."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from nginx_server import LogEntry, Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import text_rows_parquet

from streamx import ParquetStream, StreamingDataset, _core
from streamx.exceptions import CorruptShardError
from streamx.format.parquet.chunks import ranged_parts

MIB = 1 << 20
ROWS = 20000  # one row group of about 7 MB


def _parquet(page_index: bool) -> bytes:
    # pages of about data_page_size (else of 1024 rows)
    return text_rows_parquet(ROWS, 5, write_batch_size=64, write_page_index=page_index)


def _chunk(col: Any) -> tuple[int, int]:
    start = int(col.data_page_offset)
    if col.has_dictionary_page:
        start = min(start, int(col.dictionary_page_offset))
    return start, int(col.total_compressed_size)


def _pages(data: bytes, group: int = 0) -> list[tuple[tuple[int, int], list[tuple[int, int, int]]]]:
    """Each column's chunk and the data pages its offset index places (in row group
    ``group``)."""
    rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(group)
    (length,) = np.frombuffer(data[-8:-4], "<u4")
    spans = _core.parquet_offset_index_spans(data[-8 - int(length) : -8], group, len(data))
    out = []
    for j, span in enumerate(spans):
        assert span is not None
        start, size = _chunk(rg.column(j))
        index = data[span[0] : span[0] + span[1]]
        pages = _core.parquet_page_locations(index, start, size, int(rg.num_rows))
        out.append(((start, size), pages))
    return out


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    (tmp_path / "served").mkdir()
    with Nginx(tmp_path / "served") as server:
        yield server


def _dataset(url: str, local: Path) -> StreamingDataset:
    stream = ParquetStream(remote=url, local=str(local), download_timeout=30, download_retry=1)
    return StreamingDataset(streams=[stream])


def _early(log: list[LogEntry], data: bytes) -> list[tuple[int, int]]:
    """The ranges read of the file that are neither its footer nor a part of the row
    group's download: the ranges read for rows before it."""
    rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    chunks = sorted(_chunk(rg.column(j)) for j in range(rg.num_columns))
    first, last = chunks[0][0], chunks[-1][0] + chunks[-1][1]
    parts = set(ranged_parts([(first, last - first)], MIB))
    out = []
    for entry in log:
        found = re.match(r"bytes=(\d+)-(\d+)", entry.range)
        if found is None or entry.method != "GET":
            continue
        span = (int(found[1]), int(found[2]) + 1 - int(found[1]))
        if span not in parts and span[0] + span[1] < len(data):  # not the footer's
            out.append(span)
    return out


def test_the_offset_index_places_the_pages_pyarrow_wrote() -> None:
    data = _parquet(page_index=True)
    columns = _pages(data)
    assert len(columns[1][1]) > 100  # the text column's small pages: a row lies deep
    for (start, size), pages in columns:
        ends, rows, _ = _core.parquet_whole_pages(data[start : start + size], size)
        held = [(end, n) for end, n, before in zip(ends, rows, [0, *rows]) if n > before]
        assert [start + end for end, _ in held] == [p[0] + p[1] for p in pages]
        assert [p[2] for p in pages] == [0, *(n for _, n in held[:-1])]


@pytest.mark.parametrize("row", [ROWS - 1, ROWS * 3 // 4])
def test_a_deep_row_reads_its_dictionary_and_its_page_only(
    served: Nginx, tmp_path: Path, row: int
) -> None:
    data = _parquet(page_index=True)
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
    group = sum(int(n) for _, n in ds.shards[0].extra["chunks"])
    assert group > 4 * MIB
    assert ds[row] == pq.read_table(io.BytesIO(data)).slice(row, 1).to_pylist()[0]
    early = _early(served.log_when(lambda log: len(_early(log, data)) >= 6), data)
    # Of each column: the page holding the row, and its dictionary page (the bytes before
    # its first data page) where the page holds dictionary indices, or the dictionary is
    # small; and one range before the footer holding the offset indexes.
    wanted, skipped = set(), 0
    for (start, _), pages in _pages(data):
        page = [p for p in pages if p[2] <= row][-1]
        wanted.add((page[0], page[1]))
        indices = _core.parquet_page_encoding(data[page[0] : page[0] + page[1]]) in (2, 8)
        dictionary = (start, pages[0][0] - start)
        if indices or dictionary[1] <= max(page[1], 64 << 10):
            wanted.add(dictionary)
        else:
            skipped += dictionary[1]
    assert skipped > MIB  # the text column's dictionary: its plain pages do not need it
    assert wanted <= set(early) and len(early) == len(wanted) + 1
    (index,) = set(early) - wanted
    assert index[0] > max(p[0] + p[1] for _, pages in _pages(data) for p in pages)
    assert sum(n for _, n in early) < group // 4


def test_each_pages_header_is_parsed_once(
    served: Nginx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The id column's dictionary page (80 kB) is not read with its 7 kB page: whether the
    # page needs it is found from its header, which its decoding then reuses.
    data = _parquet(page_index=True)
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
    parse, parsed = _core.parquet_page_encoding, []

    def counted(page: bytes) -> int:
        parsed.append(page)
        return parse(page)

    monkeypatch.setattr(_core, "parquet_page_encoding", counted)
    assert ds[ROWS - 1] == pq.read_table(io.BytesIO(data)).slice(ROWS - 1, 1).to_pylist()[0]
    (id_start, _), id_pages = _pages(data)[0]
    assert id_pages[0][0] - id_start > max(id_pages[-1][1], 64 << 10)  # read second
    last = [pages[-1] for _, pages in _pages(data)]
    assert sorted(parsed) == sorted(data[p[0] : p[0] + p[1]] for p in last)


def _read(served: Nginx, span: tuple[int, int]) -> bool:
    """Whether ``span`` (offset, length) was read as one range."""
    wanted = f"bytes={span[0]}-{span[0] + span[1] - 1}"
    log = served.log_when(lambda log: any(e.range == wanted for e in log))
    return any(e.range == wanted for e in log)


def test_the_cached_footer_is_read_once_per_process(served: Nginx, tmp_path: Path) -> None:
    # The second row group's offset indexes are placed by the footer's bytes kept with its
    # metadata: its cached file, gone by then, is not read again.
    data = text_rows_parquet(
        2 * ROWS, 5, write_batch_size=64, write_page_index=True, row_group_size=ROWS
    )
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
    table = pq.read_table(io.BytesIO(data))
    assert ds[ROWS - 1] == table.slice(ROWS - 1, 1).to_pylist()[0]
    (cached,) = (tmp_path / "c").rglob("*.footer")
    cached.unlink()
    assert ds[2 * ROWS - 1] == table.slice(2 * ROWS - 1, 1).to_pylist()[0]
    page = _pages(data, 1)[1][1][-1]  # the text column's page holding the row
    assert _read(served, page[:2])


def test_a_file_changed_on_the_server_is_read_by_its_new_footer(
    served: Nginx, tmp_path: Path
) -> None:
    served_file = tmp_path / "served" / "t.parquet"
    for rows, seed in ((ROWS, 5), (ROWS + 3000, 6)):  # another size: another version
        data = text_rows_parquet(rows, seed, write_batch_size=64, write_page_index=True)
        served_file.write_bytes(data)
        ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
        assert ds[rows - 1] == pq.read_table(io.BytesIO(data)).slice(rows - 1, 1).to_pylist()[0]
        page = _pages(data)[1][1][-1]  # the text column's page holding the row, by range
        assert _read(served, page[:2])
    assert len(list((tmp_path / "c").rglob("*.footer"))) == 2


def test_without_an_offset_index_a_row_reads_its_chunks_start(
    served: Nginx, tmp_path: Path
) -> None:
    data = _parquet(page_index=False)
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
    expected = pq.read_table(io.BytesIO(data)).to_pylist()
    assert ds[1] == expected[1]
    early = _early(served.log_when(lambda log: len(_early(log, data)) >= 3), data)
    rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    starts = {_chunk(rg.column(j))[0] for j in range(rg.num_columns)}
    assert {start for start, _ in early} == starts  # each column's first pages, as before
    assert ds[ROWS - 1] == expected[ROWS - 1]  # past the budget: the whole row group


def test_a_corrupt_offset_index_is_named(served: Nginx, tmp_path: Path) -> None:
    data = bytearray(_parquet(page_index=True))
    (length,) = np.frombuffer(bytes(data[-8:-4]), "<u4")
    footer = bytes(data[-8 - int(length) : -8])
    span = _core.parquet_offset_index_spans(footer, 0, len(data))[1]  # the text column
    assert span is not None
    data[span[0] + span[1] // 2 : span[0] + span[1]] = b"\xff" * (span[1] - span[1] // 2)
    (tmp_path / "served" / "t.parquet").write_bytes(bytes(data))
    ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
    named = r"t\.parquet row group 0 does not decode \(column 'text'"
    with pytest.raises(CorruptShardError, match=named):
        ds[ROWS - 1]


@pytest.mark.parametrize(
    ("page_index", "row", "page", "where"),
    [(True, ROWS - 1, 2, ", its page 2 of the offset index"), (False, 1, 0, "")],
    ids=["offset_index", "prefix"],
)
def test_a_page_that_does_not_decode_is_named_as_the_row_groups_failures_are(
    served: Nginx, tmp_path: Path, page_index: bool, row: int, page: int, where: str
) -> None:
    # The id column's page holding the row, its values' half flipped: read by its offset
    # index (deep_pages), or from the chunk's start (early_rows).
    data = bytearray(_parquet(page_index))
    offset, size, _ = _pages(bytes(_parquet(page_index=True)))[0][1][page]
    data[offset + size // 2 : offset + size] = b"\xff" * (size - size // 2)
    (tmp_path / "served" / "t.parquet").write_bytes(bytes(data))
    url = f"{served.endpoint}/t.parquet"
    ds = _dataset(url, tmp_path / "c")
    with pytest.raises(CorruptShardError) as raised:
        ds[row]
    start = re.escape(f'{url} row group 0 does not decode (column "id": dictionary indices: ')
    end = re.escape(f"{where}); the file may have changed on the server")
    assert re.fullmatch(start + r"[^()]+" + end, str(raised.value))


def test_rows_of_other_pages_are_read_while_the_row_group_arrives(tmp_path: Path) -> None:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    data = _parquet(page_index=True)
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    expected = pq.read_table(io.BytesIO(data)).to_pylist()
    rows = (ROWS - 1, ROWS // 2, ROWS - 2, 7)  # the third in the first one's page
    with Nginx(tmp_path / "served", limit_rate="2m") as served:  # the row group: seconds
        ds = _dataset(f"{served.endpoint}/t.parquet", tmp_path / "c")
        assert [ds[i] for i in rows] == [expected[i] for i in rows]
        info = ds.shards[0]
        local = Path(info.local_path(info.raw_data))
        early = _early(served.log_when(lambda log: len(_early(log, data)) >= 10), data)
        for _ in range(300):  # the row group's download, which the first row started
            if local.exists():
                break
            time.sleep(0.1)
    pages: dict[int, set[tuple[int, int]]] = {row: set() for row in rows}
    for _, column in _pages(data):
        for row in rows:
            page = [p for p in column if p[2] <= row][-1]
            pages[row].add((page[0], page[1]))
    # Each row's pages were read, by range: those of the third row once, with the first's.
    assert all(pages[row] <= set(early) for row in rows)
    assert len(early) == len(set(early))
    assert ds[ROWS - 3] == expected[ROWS - 3]  # the row group, arrived meanwhile


def test_a_row_filters_kept_row_is_read_from_its_page(served: Nginx, tmp_path: Path) -> None:
    data = _parquet(page_index=True)
    (tmp_path / "served" / "t.parquet").write_bytes(data)
    stream = ParquetStream(
        remote=f"{served.endpoint}/t.parquet",
        local=str(tmp_path / "c"),
        filters=[("id", ">=", 10000)],
    )
    ds = StreamingDataset(streams=[stream])
    kept = ROWS - 2 - 10000  # the row ROWS - 2 of the file
    assert ds[kept] == pq.read_table(io.BytesIO(data)).to_pylist()[ROWS - 2]
    text_pages = _pages(data)[1][1]
    page = [p for p in text_pages if p[2] <= ROWS - 2][-1]
    log = served.log_when(lambda log: (page[0], page[1]) in _early(log, data))
    assert (page[0], page[1]) in _early(log, data)
