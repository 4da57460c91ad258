//! Crafted archives: every shape the scan accepts, and every way a hostile one is refused.

use super::numbers::{field_number, py_int};
use super::*;

fn header(name: &[u8], kind: u8, size_field: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(b"0000644\0");
    h[124..124 + size_field.len()].copy_from_slice(size_field);
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

fn member(name: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = header(name, b'0', format!("{:011o}\0", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

fn scan(data: &[u8]) -> Result<Vec<Member>, String> {
    scan_with(data, Windowing::DEFAULT)
}

fn scan_with(data: &[u8], sizes: Windowing) -> Result<Vec<Member>, String> {
    TarScanner::new(SliceSource(data), data.len() as u64, "t.tar", sizes)
        .collect_all()
        .map_err(|err| match err {
            ScanError::Corrupt(message) => message,
            ScanError::Read(never) => match never {},
        })
}

fn ended(mut parts: Vec<u8>) -> Vec<u8> {
    parts.extend_from_slice(&[0u8; 1024]);
    parts
}

/// A pax header naming the next member `p\u{fc}x/\xff.json` (not UTF-8) of 3 bytes.
fn pax_path_and_size() -> Vec<u8> {
    let record = b"20 path=p\xc3\xbcx/\xff.json\n15 size=000003\n";
    let mut pax = header(
        b"PaxHeader",
        b'x',
        format!("{:011o}\0", record.len()).as_bytes(),
    );
    pax.extend_from_slice(record);
    pax.resize(1024, 0);
    pax
}

fn m(name: &str, offset: u64, size: u64) -> Member {
    Member {
        name: name.as_bytes().to_vec(),
        offset,
        size,
    }
}

#[test]
fn plain_members_in_order() {
    let data = ended(
        [
            member(b"a.txt", b"hi"),
            member(b"b.cls", b""),
            member(b"c.bin", &[7; 600]),
        ]
        .concat(),
    );
    assert_eq!(
        scan(&data).unwrap(),
        vec![
            m("a.txt", 512, 2),
            m("b.cls", 1536, 0),
            m("c.bin", 2048, 600)
        ]
    );
}

#[test]
fn ustar_prefix_long_names_and_pax() {
    let mut prefixed = header(b"name.txt", b'0', b"00000000001\0");
    prefixed[345..348].copy_from_slice(b"dir");
    prefixed[148..156].copy_from_slice(b"        ");
    let sum: u32 = prefixed.iter().map(|&b| u32::from(b)).sum();
    prefixed[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    prefixed.extend_from_slice(&[b'x'; 512]);
    let long = b"d/".repeat(80);
    let mut gnu = header(
        b"././@LongLink",
        b'L',
        format!("{:011o}\0", long.len() + 1).as_bytes(),
    );
    gnu.extend_from_slice(&long);
    gnu.resize(1024, 0);
    let pax = pax_path_and_size();
    let data = ended(
        [
            prefixed,
            gnu,
            member(b"short", b"abc"),
            pax,
            member(b"ignored", b"abcdef"),
        ]
        .concat(),
    );
    let found = scan(&data).unwrap();
    assert_eq!(found[0], m("dir/name.txt", 512, 1));
    assert_eq!(found[1].name, long);
    assert_eq!(found[1].offset, 2560);
    assert_eq!(found[2].name, b"p\xc3\xbcx/\xff.json".to_vec());
    assert_eq!(found[2].size, 3); // the pax size wins over the header's 6
}

#[test]
fn skipped_kinds_and_missing_end_blocks() {
    let dir = header(b"dir/", b'5', b"00000000000\0");
    let data = [dir, member(b"a.txt", b"x")].concat(); // no end blocks: tolerated
    assert_eq!(scan(&data).unwrap(), vec![m("a.txt", 1024, 1)]);
}

#[test]
fn not_a_tar_and_too_small() {
    let err = scan(&b"id,text\n".repeat(200)).unwrap_err();
    assert_eq!(err, "t.tar is not a tar file: no tar header at its start");
    let err = scan(b"0123456789").unwrap_err();
    assert_eq!(err, "t.tar is not a tar file: 10 bytes, less than a header");
}

#[test]
fn checksums_are_checked_signed_sums_accepted() {
    let mut data = ended([member(b"a.txt", b"x"), member(b"b.txt", b"y")].concat());
    data[1024 + 3] ^= 0xff;
    let err = scan(&data).unwrap_err();
    assert_eq!(
        err,
        "t.tar: the tar header at offset 1024 is corrupt (checksum)"
    );
    // A header with a high byte, summed as signed bytes by an old writer.
    let mut h = header(b"\xe9.txt", b'0', b"00000000000\0");
    let signed: i32 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                0x20
            } else {
                i32::from(b as i8)
            }
        })
        .sum();
    h[148..156].copy_from_slice(format!("{signed:06o}\0 ").as_bytes());
    assert_eq!(scan(&ended(h)).unwrap().len(), 1);
}

#[test]
fn bad_numbers_are_named() {
    let first = member(b"a.txt", b"x");
    let bad = header(b"b.txt", b'0', b"12'9\0");
    let err = scan(&ended([first.clone(), bad].concat())).unwrap_err();
    assert_eq!(
        err,
        "t.tar: the tar header at offset 1024 has a bad size field b\"12'9\""
    );
    let negative = header(b"n.txt", b'0', b"-7\0");
    let err = scan(&ended([first, negative].concat())).unwrap_err();
    assert!(err.contains("declares -7 bytes, past the end"), "{err}");
}

#[test]
fn hostile_sizes_never_allocate() {
    let mut huge = vec![0x80u8];
    huge.extend_from_slice(&(1u128 << 87).to_be_bytes()[5..]);
    let data = ended(header(b"a.bin", b'0', &huge));
    let err = scan(&data).unwrap_err();
    assert!(
        err.contains(&format!("declares {} bytes", 1u128 << 87)),
        "{err}"
    );
    let negative = [0xc0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5];
    let err = scan(&ended(header(b"a.bin", b'0', &negative))).unwrap_err();
    assert!(err.contains("declares -5 bytes"), "{err}");
    let mut long = header(
        b"././@LongLink",
        b'L',
        format!("{:011o}\0", 2 << 20).as_bytes(),
    );
    long.resize(512 + (2 << 20) + 1024, 0);
    let err = scan(&long).unwrap_err();
    assert!(
        err.contains("more than a name or pax record can need"),
        "{err}"
    );
    let record = b"99999999999999999999999999999999999999999999 path=x\n";
    let mut pax = header(b"P", b'x', format!("{:011o}\0", record.len()).as_bytes());
    pax.extend_from_slice(record);
    pax.resize(1024, 0);
    let err = scan(&ended(pax)).unwrap_err();
    assert_eq!(err, "t.tar: bad pax record in the header at offset 0");
    let record = b"30 size=99999999999999999999\n";
    let mut pax = header(
        b"P",
        b'x',
        format!("{:011o}\0", record.len() - 1).as_bytes(),
    );
    pax.extend_from_slice(record);
    pax.resize(1024, 0);
    let err = scan(&ended([pax, member(b"a", b"")].concat())).unwrap_err();
    assert!(
        err.contains("bad pax record") || err.contains("pax size"),
        "{err}"
    );
}

#[test]
fn truncations() {
    let data = ended([member(b"a.txt", b"x"), member(b"b.bin", &[1; 3000])].concat());
    let err = scan(&data[..1024 + 512 + 100]).unwrap_err();
    assert!(
        err.starts_with("t.tar is truncated: the member at offset 1024 declares 3000"),
        "{err}"
    );
    let err = scan(&data[..1024 + 100]).unwrap_err();
    assert_eq!(
        err,
        "t.tar is truncated: a header at offset 1024 is cut short"
    );
}

#[test]
fn unknown_kind() {
    let err = scan(&ended(header(b"odd", b'Z', b"00000000000\0"))).unwrap_err();
    assert_eq!(
        err,
        "t.tar: the tar header at offset 0 has an unknown type b'Z'"
    );
    let err = scan(&ended(header(b"odd", 0xff, b"00000000000\0"))).unwrap_err();
    assert!(err.ends_with("unknown type b'\\xff'"), "{err}");
}

#[test]
fn windows_read_on_then_jump() {
    struct Counting<'a>(&'a [u8], Vec<(u64, usize)>);
    impl ReadAt for Counting<'_> {
        type Error = std::convert::Infallible;
        fn read_at(&mut self, start: u64, len: usize) -> Result<Vec<u8>, Self::Error> {
            self.1.push((start, len));
            SliceSource(self.0).read_at(start, len)
        }
    }
    let mut parts = Vec::new();
    for i in 0..100 {
        parts.push(member(format!("s{i}.txt").as_bytes(), &[1; 100]));
    }
    parts.push(member(b"big.bin", &vec![2; 40_000]));
    parts.push(member(b"end.txt", b"e"));
    let data = ended(parts.concat());
    let sizes = Windowing::new(4096, 16384, 20_000).unwrap();
    let mut scanner = TarScanner::new(Counting(&data, Vec::new()), data.len() as u64, "w", sizes);
    let mut found = 0;
    while scanner.next_member().unwrap().is_some() {
        found += 1;
    }
    assert_eq!(found, 102);
    let reads = &scanner.source().1;
    let total: usize = reads.iter().map(|r| r.1).sum();
    assert!(
        total < data.len() - 30_000,
        "the big body is jumped: {reads:?}"
    );
    assert!(reads.iter().all(|r| r.1 <= 16384));
}

#[test]
fn scans_a_file_in_place() {
    let data = ended([member(b"a.txt", b"hi"), member(b"b.txt", b"yo")].concat());
    let path = std::env::temp_dir().join(format!("streamx-tar-scan-{}.tar", std::process::id()));
    std::fs::write(&path, &data).unwrap();
    let file = FileSource(std::fs::File::open(&path).unwrap());
    let found = TarScanner::new(file, data.len() as u64, "f", Windowing::DEFAULT).collect_all();
    // Declared longer than the file: a header read comes back short.
    let file = FileSource(std::fs::File::open(&path).unwrap());
    let short =
        TarScanner::new(file, data.len() as u64 + 4096, "f", Windowing::DEFAULT).collect_all();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        found.unwrap(),
        vec![m("a.txt", 512, 2), m("b.txt", 1536, 2)]
    );
    assert!(matches!(short, Ok(_) | Err(ScanError::Corrupt(_))));
}

#[test]
fn python_int_rules() {
    assert_eq!(py_int(b" 0o17 ", 8), Some(15));
    assert_eq!(py_int(b"5_5", 8), Some(45));
    assert_eq!(py_int(b"5__5", 8), None);
    assert_eq!(py_int(b"_5", 8), None);
    assert_eq!(py_int(b"012", 10), None);
    assert_eq!(py_int(b"0_0", 10), Some(0));
    assert_eq!(py_int(b"\x0b-5\t", 10), Some(-5));
    assert_eq!(py_int(b"\x1c5", 10), None);
    assert_eq!(py_int(b"8", 8), None);
    assert_eq!(field_number(b"  17 \0junk"), Ok(15));
    assert_eq!(field_number(b"\0\0\0"), Ok(0));
    assert_eq!(
        bytes_repr(b"a'\"\\\n\x00\x7f"),
        "b'a\\'\"\\\\\\n\\x00\\x7f'"
    );
}

#[test]
fn a_failed_scan_is_over() {
    let data = ended([member(b"a.txt", b"x"), header(b"b", b'Z', b"0\0")].concat());
    let mut scanner = TarScanner::new(
        SliceSource(&data),
        data.len() as u64,
        "t",
        Windowing::DEFAULT,
    );
    assert!(scanner.next_member().unwrap().is_some());
    assert!(scanner.next_member().is_err());
    assert!(scanner.next_member().unwrap().is_none());
}

#[test]
fn damaged_archives_give_errors_or_members_inside_the_file() {
    let pax = pax_path_and_size();
    let mut long = header(b"././@LongLink", b'L', b"00000000012\0");
    long.extend_from_slice(b"long/name.x\0");
    long.resize(1024, 0);
    let clean = ended(
        [
            member(b"a.txt", b"hi"),
            pax,
            member(b"b", b"abcdef"),
            long,
            member(b"c", &[1; 700]),
        ]
        .concat(),
    );
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for case in 0..20_000 {
        let mut data = clean.clone();
        for _ in 0..=(next() % 4) {
            let at = (next() % data.len() as u64) as usize;
            data[at] = next() as u8;
            let block = at - at % 512;
            if case % 2 == 1 && block + 512 <= data.len() {
                // The checksum made right again, so the damaged field itself is read.
                data[block + 148..block + 156].copy_from_slice(b"        ");
                let sum: u32 = data[block..block + 512].iter().map(|&b| u32::from(b)).sum();
                data[block + 148..block + 156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            }
        }
        if case % 5 == 0 {
            data.truncate((next() % data.len() as u64) as usize);
        }
        let sizes = Windowing::new(1 + next() % 2048, 4096, next() % 4096).unwrap();
        if let Ok(found) = scan_with(&data, sizes) {
            for m in found {
                assert!(m.offset + m.size <= data.len() as u64, "case {case}: {m:?}");
            }
        }
    }
}
