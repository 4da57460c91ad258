//! The offset index: its spans read from a footer and its page locations, each from bytes
//! written here in the compact protocol, and bytes cut short or flipped anywhere.

use super::offset_index::{data_page_encoding, offset_index_spans, page_locations, PageLocation};
use super::tests::page;
use super::Codec;

const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const STRUCT: u8 = 12;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A struct's fields in the compact protocol; each field as (id, type, encoded value).
fn compact(fields: &[(i16, u8, Vec<u8>)]) -> Vec<u8> {
    let (mut out, mut last) = (Vec::new(), 0i16);
    for (id, kind, value) in fields {
        let delta = id - last;
        if (1..=15).contains(&delta) {
            out.push(((delta as u8) << 4) | kind);
        } else {
            out.push(*kind);
            zigzag(&mut out, i64::from(*id));
        }
        last = *id;
        out.extend(value);
    }
    out.push(0);
    out
}

fn int(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    zigzag(&mut out, v);
    out
}

fn list(kind: u8, items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    if items.len() < 15 {
        out.push(((items.len() as u8) << 4) | kind);
    } else {
        out.push(0xf0 | kind);
        varint(&mut out, items.len() as u64);
    }
    for item in items {
        out.extend(item);
    }
    out
}

fn chunk(index: Option<(i64, i64)>) -> Vec<u8> {
    let meta = compact(&[(1, I32, int(6)), (7, I64, int(12345))]);
    let mut fields = vec![(2, I64, int(4)), (3, STRUCT, meta)];
    if let Some((offset, length)) = index {
        fields.extend([(4, I64, int(offset)), (5, I32, int(length))]);
    }
    fields.push((7, I32, int(9))); // its column index's length, skipped
    compact(&fields)
}

/// A footer of two row groups: the first without offset indexes, the second with one for
/// its first column (1000 bytes at 5000) and none for its second.
fn footer() -> Vec<u8> {
    let group =
        |columns: Vec<Vec<u8>>| compact(&[(1, LIST, list(STRUCT, &columns)), (3, I64, int(100))]);
    let groups = [
        group(vec![chunk(None), chunk(None)]),
        group(vec![chunk(Some((5000, 1000))), chunk(None)]),
    ];
    let schema = list(STRUCT, &[compact(&[(4, BINARY, vec![1, b'x'])])]);
    compact(&[
        (1, I32, int(2)),
        (2, LIST, schema),
        (3, I64, int(200)),
        (4, LIST, list(STRUCT, &groups)),
    ])
}

#[test]
fn a_footer_gives_each_column_chunks_offset_index() {
    let bytes = footer();
    assert_eq!(offset_index_spans(&bytes, 0, 8000), Ok(vec![None, None]));
    assert_eq!(
        offset_index_spans(&bytes, 1, 8000),
        Ok(vec![Some((5000, 1000)), None])
    );
    let err = offset_index_spans(&bytes, 2, 8000).unwrap_err();
    assert!(err.contains("holds 2 row groups"), "{err}");
}

#[test]
fn an_offset_index_outside_the_file_is_refused() {
    let err = offset_index_spans(&footer(), 1, 5999).unwrap_err();
    assert!(err.contains("outside the file's 5999 bytes"), "{err}");
    for (offset, length) in [(-1, 10), (10, 0), (10, -5), (i64::MAX, 10)] {
        let groups = [compact(&[(
            1,
            LIST,
            list(STRUCT, &[chunk(Some((offset, length)))]),
        )])];
        let bytes = compact(&[(4, LIST, list(STRUCT, &groups))]);
        assert!(
            offset_index_spans(&bytes, 0, 1 << 40).is_err(),
            "{offset} {length}"
        );
    }
}

#[test]
fn a_footer_cut_short_or_flipped_is_an_error_never_a_panic() {
    let bytes = footer();
    for cut in 0..bytes.len() {
        assert!(
            offset_index_spans(&bytes[..cut], 1, 8000).is_err(),
            "cut at {cut}"
        );
    }
    for at in 0..bytes.len() {
        for flip in [0x01, 0x0f, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            let _ = offset_index_spans(&bad, 1, 8000); // any answer but a panic
        }
    }
    // A list that claims more items than bytes.
    let mut huge = vec![0x49, 0xfc];
    varint(&mut huge, u64::MAX >> 1);
    assert!(offset_index_spans(&huge, 0, 8000).is_err());
}

fn location(offset: i64, size: i64, first: i64) -> Vec<u8> {
    compact(&[
        (1, I64, int(offset)),
        (2, I32, int(size)),
        (3, I64, int(first)),
    ])
}

/// A page location: offset, compressed size, first row.
type Page = (i64, i64, i64);

fn index(pages: &[Page]) -> Vec<u8> {
    let items: Vec<_> = pages.iter().map(|&(o, s, f)| location(o, s, f)).collect();
    let sizes = list(I64, &[int(10), int(20)]); // unencoded byte array sizes, skipped
    compact(&[(1, LIST, list(STRUCT, &items)), (2, LIST, sizes)])
}

#[test]
fn an_offset_index_gives_each_data_page() {
    let pages = [(1100, 300, 0), (1400, 250, 40), (1650, 350, 90)];
    let got = page_locations(&index(&pages), 1000, 1000, 120).unwrap();
    let want: Vec<_> = pages
        .iter()
        .map(|&(o, s, f)| PageLocation {
            offset: o as u64,
            compressed_size: s as u64,
            first_row: f as u64,
        })
        .collect();
    assert_eq!(got, want);
    // Twenty pages: a list whose size takes a varint of its own.
    let many: Vec<_> = (0..20).map(|k| (1000 + 10 * k, 10, 3 * k)).collect();
    assert_eq!(
        page_locations(&index(&many), 1000, 200, 60).unwrap().len(),
        20
    );
}

#[test]
fn pages_that_contradict_the_chunk_or_rows_are_refused() {
    let cases: [(&[Page], &str); 9] = [
        (&[], "no page of row 0"),
        (&[(1100, 300, 5)], "no page of row 0"),
        (
            &[(1100, 300, 0), (1400, 600, 0)],
            "not past the page before",
        ),
        (
            &[(1100, 300, 0), (1400, 600, 130)],
            "not below the row group's 120 rows",
        ),
        (&[(900, 300, 0)], "not in the column chunk"),
        (
            &[(1100, 300, 0), (1300, 250, 40)],
            "not in the column chunk",
        ),
        (
            &[(1100, 300, 0), (1900, 250, 40)],
            "not in the column chunk",
        ),
        (&[(1100, 0, 0)], "not in the column chunk"),
        (
            &[(1100, 300, 0)],
            "end at 1400, not where the column chunk ends (2000)",
        ),
    ];
    for (pages, why) in cases {
        let err = page_locations(&index(pages), 1000, 1000, 120).unwrap_err();
        assert!(err.contains(why), "{pages:?}: {err}");
    }
    let negative = index(&[(1100, -3, 0)]);
    assert!(page_locations(&negative, 1000, 1000, 120).is_err());
}

#[test]
fn an_offset_index_cut_short_or_flipped_is_an_error_never_a_panic() {
    let bytes = index(&[(1100, 300, 0), (1400, 250, 40), (1650, 350, 90)]);
    for cut in 0..bytes.len() {
        let got = page_locations(&bytes[..cut], 1000, 1000, 120);
        assert!(got.is_err(), "cut at {cut}: {got:?}");
    }
    for at in 0..bytes.len() {
        for flip in [0x01, 0x0f, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            if let Ok(pages) = page_locations(&bad, 1000, 1000, 120) {
                assert!(pages.iter().all(|p| p.offset + p.compressed_size <= 2000));
            }
        }
    }
}

#[test]
fn a_data_pages_encoding_says_whether_it_needs_the_dictionary() {
    let plain = page(0, 5, 0, &[7u8; 40], Codec::Uncompressed);
    assert_eq!(data_page_encoding(&plain), Ok(0));
    let indices = page(0, 5, 8, &[7u8; 40], Codec::Uncompressed);
    assert_eq!(data_page_encoding(&indices), Ok(8));
    let dictionary = page(2, 3, 0, &[7u8; 12], Codec::Uncompressed);
    assert!(data_page_encoding(&dictionary)
        .unwrap_err()
        .contains("type 2"));
    assert!(data_page_encoding(&plain[..3]).is_err());
}
