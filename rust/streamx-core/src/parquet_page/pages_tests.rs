//! The whole pages of a chunk prefix: a dictionary page and data pages, prefixes cut
//! anywhere, and headers that lie about their sizes.

use super::pages::{whole_pages, WholePages};
use super::tests::{page, varint};
use super::Codec;

/// A dictionary page of 3 entries, then data pages of 5 and 7 values.
fn chunk() -> (Vec<u8>, Vec<u64>) {
    let mut chunk = Vec::new();
    let mut ends = Vec::new();
    for (kind, values, body) in [(2, 3, 12), (0, 5, 40), (0, 7, 30)] {
        chunk.extend(page(kind, values, 0, &vec![7u8; body], Codec::Uncompressed));
        ends.push(chunk.len() as u64);
    }
    (chunk, ends)
}

#[test]
fn a_dictionary_page_holds_no_rows_and_data_pages_add_theirs() {
    let (chunk, ends) = chunk();
    let got = whole_pages(&chunk, chunk.len() as u64).unwrap();
    let want = WholePages {
        ends,
        rows: vec![0, 5, 12],
        next_end: None,
    };
    assert_eq!(got, want);
}

#[test]
fn a_prefix_holds_the_pages_it_holds_whole() {
    let (chunk, ends) = chunk();
    let length = chunk.len() as u64;
    for cut in 0..chunk.len() {
        let got = whole_pages(&chunk[..cut], length).unwrap();
        let whole = ends.iter().filter(|end| **end <= cut as u64).count();
        assert_eq!(got.ends, ends[..whole], "cut at {cut}");
        assert_eq!(got.rows, [0, 5, 12][..whole], "cut at {cut}");
        // Cut in a page's body, its header says where it ends; cut in its header, nothing.
        if let Some(next) = got.next_end {
            assert_eq!(next, ends[whole], "cut at {cut}");
        }
    }
    let into_header = (ends[0] + 4) as usize; // the first data page's header is longer
    assert_eq!(
        whole_pages(&chunk[..into_header], length).unwrap().next_end,
        None
    );
    let late = (ends[1] - 1) as usize;
    assert_eq!(
        whole_pages(&chunk[..late], length).unwrap().next_end,
        Some(ends[1])
    );
}

#[test]
fn a_page_claiming_more_than_its_chunk_is_refused() {
    let huge = page(0, 5, 0, &[1, 2, 3], Codec::Uncompressed);
    // The same header, its compressed size (field 3) rewritten to i32::MAX.
    let mut lying = Vec::new();
    lying.extend_from_slice(&[0x15, 0x00, 0x15]);
    varint(&mut lying, 6);
    lying.push(0x15);
    varint(&mut lying, u64::from(u32::MAX - 1)); // zigzag of i32::MAX
    lying.extend_from_slice(&[0x2c, 0x15, 0x0a, 0x00, 0x00]);
    let err = whole_pages(&lying, 1 << 20).unwrap_err();
    assert!(err.contains("a page of 2147483647 bytes"), "{err}");
    let err = whole_pages(&huge, huge.len() as u64 - 1).unwrap_err();
    assert!(err.contains("a page of 3 bytes and 5 values at 0"), "{err}");
    // A negative size is no page either.
    let mut negative = vec![0x15, 0x00, 0x15, 0x06, 0x15];
    varint(&mut negative, 1); // zigzag of -1
    negative.extend_from_slice(&[0x00]);
    assert!(whole_pages(&negative, 64)
        .unwrap_err()
        .contains("a page of -1 bytes"));
}

#[test]
fn a_header_cut_short_ends_the_run_and_a_bad_one_is_an_error() {
    let (chunk, ends) = chunk();
    // A list field claiming more items than bytes follow: cut short, not whole.
    let mut listed = chunk[..ends[0] as usize].to_vec();
    listed.extend_from_slice(&[0x15, 0x00, 0x19, 0xf5]);
    varint(&mut listed, 1 << 40);
    let got = whole_pages(&listed, 1 << 20).unwrap();
    assert_eq!((got.ends, got.next_end), (vec![ends[0]], None));
    let mut typeless = chunk[..ends[0] as usize].to_vec();
    typeless.extend_from_slice(&[0x35, 0x02, 0x00]); // field 3 alone, then stop
    let err = whole_pages(&typeless, 1 << 20).unwrap_err();
    assert!(err.contains("without its type") && err.contains(&format!("at {}", ends[0])));
    let err = whole_pages(&[0x1c; 64], 64).unwrap_err();
    assert!(err.contains("nested too deep"), "{err}");
}
