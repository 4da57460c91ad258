//! Column chunks built by hand (page headers in the Thrift compact protocol), decoded; and
//! every truncation and many byte flips of them refused without a panic.

use super::column::{decode, ColumnSpec, Physical, Refusal, Value};
use super::thrift::page_header;
use super::{decode_row_group, ChunkSpec, Codec};

/// A compact-protocol struct: `(field id, i32 value)` pairs and nested structs.
enum Field {
    Int(i16, i32),
    Bool(i16, bool),
    Struct(i16, Vec<Field>),
}

pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn write_struct(out: &mut Vec<u8>, fields: &[Field]) {
    let mut last = 0i16;
    for field in fields {
        let (id, kind) = match field {
            Field::Int(id, _) => (*id, 5u8),
            Field::Bool(id, v) => (*id, if *v { 1 } else { 2 }),
            Field::Struct(id, _) => (*id, 12),
        };
        out.push((((id - last) as u8) << 4) | kind);
        last = id;
        match field {
            Field::Int(_, v) => varint(out, ((*v << 1) ^ (*v >> 31)) as u32 as u64),
            Field::Bool(..) => {}
            Field::Struct(_, inner) => write_struct(out, inner),
        }
    }
    out.push(0);
}

/// A page: its header (type `kind`, `num_values`, `encoding`) and its body, compressed.
pub(super) fn page(kind: i32, values: i32, encoding: i32, raw: &[u8], codec: Codec) -> Vec<u8> {
    let body = match codec {
        Codec::Snappy => snap::raw::Encoder::new().compress_vec(raw).unwrap(),
        Codec::Zstd => zstd::bulk::compress(raw, 3).unwrap(),
        _ => raw.to_vec(),
    };
    let inner = if kind == 2 {
        Field::Struct(7, vec![Field::Int(1, values), Field::Int(2, encoding)])
    } else {
        Field::Struct(
            5,
            vec![
                Field::Int(1, values),
                Field::Int(2, encoding),
                Field::Int(3, 3),
                Field::Int(4, 3),
            ],
        )
    };
    let mut out = Vec::new();
    write_struct(
        &mut out,
        &[
            Field::Int(1, kind),
            Field::Int(2, raw.len() as i32),
            Field::Int(3, body.len() as i32),
            inner,
        ],
    );
    out.extend_from_slice(&body);
    out
}

fn plain_strings(values: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// Definition levels (1 bit, RLE-framed with a 4-byte length) for `present`.
fn levels(present: &[bool]) -> Vec<u8> {
    let groups = present.len().div_ceil(8);
    let mut runs = Vec::new();
    varint(&mut runs, ((groups as u64) << 1) | 1);
    for chunk in present.chunks(8) {
        let mut b = 0u8;
        for (k, p) in chunk.iter().enumerate() {
            b |= u8::from(*p) << k;
        }
        runs.push(b);
    }
    let mut out = (runs.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&runs);
    out
}

/// A dictionary-encoded optional string chunk: rows `words[index]` or null.
fn dictionary_chunk(words: &[&str], rows: &[Option<u32>], codec: Codec) -> Vec<u8> {
    let mut chunk = page(2, words.len() as i32, 0, &plain_strings(words), codec);
    let present: Vec<bool> = rows.iter().map(Option::is_some).collect();
    let mut raw = levels(&present);
    raw.push(3); // bit width
    let indices: Vec<u32> = rows.iter().flatten().copied().collect();
    // One run of each index, RLE: header (1 << 1), value in one byte.
    for index in indices {
        varint(&mut raw, 1 << 1);
        raw.push(index as u8);
    }
    chunk.extend(page(0, rows.len() as i32, 8, &raw, codec));
    chunk
}

fn spec(physical: Physical, codec: Codec, rows: usize) -> ColumnSpec {
    ColumnSpec {
        physical,
        codec,
        max_def: 1,
        rows,
    }
}

#[test]
fn dictionary_strings_with_nulls_decode_in_every_codec() {
    let words = ["alpha", "", "gamma", "δέλτα"];
    let rows = [Some(2), None, Some(0), Some(3), Some(1), None, Some(2)];
    for codec in [Codec::Uncompressed, Codec::Snappy, Codec::Zstd] {
        let chunk = dictionary_chunk(&words, &rows, codec);
        let column = decode(&chunk, &spec(Physical::ByteArray, codec, rows.len())).unwrap();
        for (row, want) in rows.iter().enumerate() {
            let got = column.value(row);
            let want = want.map(|i| Value::Bytes(words[i as usize].as_bytes()));
            assert_eq!(got, want, "row {row} ({codec:?})");
        }
        assert_eq!(column.value(rows.len()), None);
    }
}

#[test]
fn plain_numbers_over_two_pages_decode() {
    let first: Vec<u8> = [5i64, -7].iter().flat_map(|v| v.to_le_bytes()).collect();
    let second: Vec<u8> = [i64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut chunk = Vec::new();
    for values in [&first, &second] {
        let mut raw = levels(&vec![true; values.len() / 8]);
        raw.extend_from_slice(values);
        chunk.extend(page(0, (values.len() / 8) as i32, 0, &raw, Codec::Snappy));
    }
    let column = decode(&chunk, &spec(Physical::Int64, Codec::Snappy, 3)).unwrap();
    let got: Vec<_> = (0..3).map(|r| column.value(r)).collect();
    let want = [5, -7, i64::MAX].map(|v| Some(Value::Int64(v)));
    assert_eq!(got, want);
}

#[test]
fn a_required_double_column_has_no_levels() {
    let raw: Vec<u8> = [1.5f64, -0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let chunk = page(0, 2, 0, &raw, Codec::Uncompressed);
    let mut required = spec(Physical::Double, Codec::Uncompressed, 2);
    required.max_def = 0;
    let column = decode(&chunk, &required).unwrap();
    assert_eq!(column.value(0), Some(Value::Double(1.5)));
    assert_eq!(column.value(1), Some(Value::Double(-0.0)));
}

#[test]
fn other_encodings_are_left_to_the_general_reader() {
    // DELTA_BINARY_PACKED (5): unsupported, not corrupt.
    let mut raw = levels(&[true]);
    raw.extend_from_slice(&[0, 0, 0, 0]);
    let chunk = page(0, 1, 5, &raw, Codec::Uncompressed);
    let refused = decode(&chunk, &spec(Physical::Int32, Codec::Uncompressed, 1)).unwrap_err();
    assert!(matches!(refused, Refusal::Unsupported(_)), "{refused:?}");
}

#[test]
fn a_page_declaring_far_more_than_its_bytes_is_left_to_the_general_reader() {
    // 2 MiB of zeros: zstd makes a few dozen bytes of them, past the expansion the core
    // zeroes a buffer for (a hostile header could declare as much for any small page).
    let raw = vec![0u8; 2 << 20];
    let rows = raw.len() / 8;
    let chunk = page(0, rows as i32, 0, &raw, Codec::Zstd);
    let mut required = spec(Physical::Int64, Codec::Zstd, rows);
    required.max_def = 0;
    let refused = decode(&chunk, &required).unwrap_err();
    assert!(
        matches!(&refused, Refusal::Unsupported(m) if m.contains("declaring")),
        "{refused:?}"
    );
    // The same values uncompressed are decoded by the core.
    let chunk = page(0, rows as i32, 0, &raw, Codec::Uncompressed);
    let mut plain = spec(Physical::Int64, Codec::Uncompressed, rows);
    plain.max_def = 0;
    let column = decode(&chunk, &plain).unwrap();
    assert_eq!(column.value(rows - 1), Some(Value::Int64(0)));
}

#[test]
fn an_index_past_the_dictionary_is_corrupt() {
    let chunk = dictionary_chunk(&["a", "b"], &[Some(5)], Codec::Uncompressed);
    let refused = decode(&chunk, &spec(Physical::ByteArray, Codec::Uncompressed, 1)).unwrap_err();
    assert!(
        matches!(&refused, Refusal::Corrupt(m) if m.contains("index 5")),
        "{refused:?}"
    );
}

#[test]
fn fewer_rows_than_the_footer_says_is_corrupt() {
    let chunk = dictionary_chunk(&["a"], &[Some(0)], Codec::Snappy);
    let refused = decode(&chunk, &spec(Physical::ByteArray, Codec::Snappy, 2)).unwrap_err();
    assert!(
        matches!(&refused, Refusal::Corrupt(m) if m.contains("1 rows")),
        "{refused:?}"
    );
}

#[test]
fn every_truncation_and_byte_flip_is_refused_or_decoded_without_panic() {
    let words = ["one", "two", "three", "four", "five"];
    let rows: Vec<Option<u32>> = (0..40).map(|i| (i % 3 != 0).then_some(i % 5)).collect();
    for codec in [Codec::Uncompressed, Codec::Snappy, Codec::Zstd] {
        let chunk = dictionary_chunk(&words, &rows, codec);
        let want = spec(Physical::ByteArray, codec, rows.len());
        for end in 0..chunk.len() {
            assert!(
                decode(&chunk[..end], &want).is_err(),
                "{codec:?} cut at {end}"
            );
        }
        for at in 0..chunk.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = chunk.clone();
                bad[at] ^= flip;
                if let Ok(column) = decode(&bad, &want) {
                    for row in 0..rows.len() {
                        let _ = column.value(row);
                    }
                }
            }
        }
    }
}

#[test]
fn a_chunk_past_the_row_group_names_the_file_and_column() {
    let chunks = [ChunkSpec {
        name: "text".to_owned(),
        offset: 10,
        length: 100,
        column: spec(Physical::ByteArray, Codec::Snappy, 1),
    }];
    let err = decode_row_group(&[0u8; 50], &chunks, "t.parquet row group 3").unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains("t.parquet row group 3") && shown.contains("\"text\""),
        "{shown}"
    );
}

#[test]
fn a_header_with_unknown_fields_skips_them() {
    let mut out = Vec::new();
    // Field 1 (type), an unknown binary field 9 of 3 bytes, a list field 10, then sizes.
    out.push(0x15);
    varint(&mut out, 0);
    out.push(0x88);
    varint(&mut out, 3);
    out.extend_from_slice(b"abc");
    out.push(0x19);
    out.push(0x25); // two i32s
    out.extend_from_slice(&[2, 4]);
    out.push(0);
    let (header, length) = page_header(&out).unwrap();
    assert_eq!((header.kind, length), (0, out.len()));
    assert!(page_header(&[0x15]).is_err());
    assert!(page_header(&[0x1c; 64]).is_err(), "deep nesting");
}

#[test]
fn a_v2_page_stores_its_levels_apart_and_may_leave_values_uncompressed() {
    // Three rows, the middle one null: levels 1, 0, 1 as one bit-packed group (no length).
    let levels = [(1u8 << 1) | 1, 0b101];
    let values: Vec<u8> = [4i32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut chunk = Vec::new();
    write_struct(
        &mut chunk,
        &[
            Field::Int(1, 3),
            Field::Int(2, (levels.len() + values.len()) as i32),
            Field::Int(3, (levels.len() + values.len()) as i32),
            Field::Struct(
                8,
                vec![
                    Field::Int(1, 3),
                    Field::Int(2, 1),
                    Field::Int(3, 3),
                    Field::Int(4, 0),
                    Field::Int(5, levels.len() as i32),
                    Field::Int(6, 0),
                    Field::Bool(7, false),
                ],
            ),
        ],
    );
    chunk.extend_from_slice(&levels);
    chunk.extend_from_slice(&values);
    let column = decode(&chunk, &spec(Physical::Int32, Codec::Snappy, 3)).unwrap();
    let got: Vec<_> = (0..3).map(|r| column.value(r)).collect();
    assert_eq!(got, [Some(Value::Int32(4)), None, Some(Value::Int32(9))]);
}

/// Definition levels of `n` rows all present: one RLE run of ones, as writers make them.
fn all_levels(n: usize) -> Vec<u8> {
    let mut runs = Vec::new();
    varint(&mut runs, (n as u64) << 1);
    runs.push(1);
    let mut out = (runs.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&runs);
    out
}

/// A data page of dictionary `indices`, every row present.
fn index_page(indices: &[u32], codec: Codec) -> Vec<u8> {
    let mut raw = all_levels(indices.len());
    raw.push(3); // bit width
    for index in indices {
        varint(&mut raw, 1 << 1);
        raw.push(*index as u8);
    }
    page(0, indices.len() as i32, 8, &raw, codec)
}

fn strings(column: &super::Column, rows: usize) -> Vec<Option<String>> {
    (0..rows)
        .map(|r| match column.value(r) {
            Some(Value::Bytes(b)) => Some(String::from_utf8(b.to_vec()).unwrap()),
            None => None,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn rows_in_dictionary_order_then_a_later_page_out_of_order_decode() {
    let words = ["a", "b", "c", "d", "e"];
    let mut chunk = page(2, 5, 0, &plain_strings(&words), Codec::Snappy);
    chunk.extend(index_page(&[0, 1, 2], Codec::Snappy)); // rows 0-2: entries 0-2, no map
    chunk.extend(index_page(&[4, 3, 3, 0], Codec::Snappy)); // a later page, mapped
    let column = decode(&chunk, &spec(Physical::ByteArray, Codec::Snappy, 7)).unwrap();
    let want = ["a", "b", "c", "e", "d", "d", "a"].map(|s| Some(s.to_owned()));
    assert_eq!(strings(&column, 7), want);
    assert_eq!((column.len(), column.value(7)), (7, None));
}

#[test]
fn a_dictionary_then_a_plain_fallback_page_decodes() {
    // Writers fall back to plain pages once the dictionary is full: their values follow the
    // dictionary's entries.
    let words = ["x", "y"];
    for first in [vec![0, 1], vec![1]] {
        let mut chunk = page(2, 2, 0, &plain_strings(&words), Codec::Uncompressed);
        chunk.extend(index_page(&first, Codec::Uncompressed));
        let mut raw = all_levels(2);
        raw.extend(plain_strings(&["p", "q"]));
        chunk.extend(page(0, 2, 0, &raw, Codec::Uncompressed));
        let rows = first.len() + 2;
        let column = decode(
            &chunk,
            &spec(Physical::ByteArray, Codec::Uncompressed, rows),
        )
        .unwrap();
        let mut want: Vec<_> = first
            .iter()
            .map(|i| Some(words[*i as usize].to_owned()))
            .collect();
        want.extend(["p", "q"].map(|s| Some(s.to_owned())));
        assert_eq!(strings(&column, rows), want, "first page {first:?}");
    }
}

#[test]
fn a_page_with_nulls_after_rows_in_order_decodes() {
    let words = ["a", "b", "c"];
    let mut chunk = page(2, 3, 0, &plain_strings(&words), Codec::Zstd);
    chunk.extend(index_page(&[0, 1], Codec::Zstd));
    let mut raw = levels(&[false, true, false]);
    raw.push(3);
    varint(&mut raw, 1 << 1);
    raw.push(2);
    chunk.extend(page(0, 3, 8, &raw, Codec::Zstd));
    let column = decode(&chunk, &spec(Physical::ByteArray, Codec::Zstd, 5)).unwrap();
    let want = [Some("a"), Some("b"), None, Some("c"), None].map(|s| s.map(str::to_owned));
    assert_eq!(strings(&column, 5), want);
}

#[test]
fn plain_numbers_without_nulls_map_rows_directly() {
    let values: Vec<u8> = (0..9i32).flat_map(|v| (v * 3).to_le_bytes()).collect();
    let mut raw = all_levels(9);
    raw.extend_from_slice(&values);
    let chunk = page(0, 9, 0, &raw, Codec::Snappy);
    let column = decode(&chunk, &spec(Physical::Int32, Codec::Snappy, 9)).unwrap();
    let got: Vec<_> = (0..10).map(|r| column.value(r)).collect();
    let mut want: Vec<_> = (0..9).map(|v| Some(Value::Int32(v * 3))).collect();
    want.push(None);
    assert_eq!(got, want);
}

#[test]
fn an_index_past_the_dictionary_in_a_page_without_nulls_is_corrupt() {
    let mut chunk = page(2, 2, 0, &plain_strings(&["a", "b"]), Codec::Uncompressed);
    chunk.extend(index_page(&[0, 6], Codec::Uncompressed));
    let refused = decode(&chunk, &spec(Physical::ByteArray, Codec::Uncompressed, 2)).unwrap_err();
    assert!(
        matches!(&refused, Refusal::Corrupt(m) if m.contains("index 6 in a dictionary of 2")),
        "{refused:?}"
    );
    // Bit-packed indices too: one group of eight 3-bit values, the last one 7.
    let mut raw = all_levels(8);
    raw.extend([3, (1 << 1) | 1]);
    let word: u32 = 7 << (3 * 7); // values 0 but the last, 7
    raw.extend_from_slice(&word.to_le_bytes()[..3]);
    let mut chunk = page(2, 2, 0, &plain_strings(&["a", "b"]), Codec::Uncompressed);
    chunk.extend(page(0, 8, 8, &raw, Codec::Uncompressed));
    let refused = decode(&chunk, &spec(Physical::ByteArray, Codec::Uncompressed, 8)).unwrap_err();
    assert!(
        matches!(&refused, Refusal::Corrupt(m) if m.contains("index 7")),
        "{refused:?}"
    );
}

#[test]
fn spans_of_a_file_are_read_one_after_the_other_and_a_short_one_is_named() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"0123456789").unwrap();
    let fd = file.as_raw_fd();
    let mut buf = vec![9u8; 64]; // a buffer that held more before
    assert_eq!(
        super::read_spans(fd, &[(7, 3), (0, 2)], &mut buf).unwrap(),
        None
    );
    assert_eq!(buf, b"78901");
    let short = super::read_spans(fd, &[(0, 2), (8, 5), (11, 1)], &mut buf).unwrap();
    assert_eq!(short, Some((8, 5, 2)));
    // Grown past what the last read left: every byte is the file's, none stale.
    assert_eq!(
        super::read_spans(fd, &[(0, 10), (3, 2)], &mut buf).unwrap(),
        None
    );
    assert_eq!(buf, b"012345678934");
    assert!(super::read_spans(-1, &[(0, 1)], &mut buf).is_err());
}
