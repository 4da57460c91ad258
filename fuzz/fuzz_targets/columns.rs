//! Scalar and column decoding: an encoding name and a sample, split into columns by the
//! layout that index `column_sizes` give, and each fixed-size value checked for its width.
#![no_main]

use libfuzzer_sys::fuzz_target;
use streamx_core::mds::{ColumnLayout, Encoding};

fuzz_target!(|data: &[u8]| {
    let Some(cut) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (names, sample) = (&data[..cut], &data[cut + 1..]);
    let Ok(names) = std::str::from_utf8(names) else {
        return;
    };
    let encodings: Vec<Encoding> = names
        .split(',')
        .filter_map(|n| Encoding::parse(n).ok())
        .collect();
    let sizes: Vec<Option<u64>> = encodings.iter().map(Encoding::fixed_size).collect();
    let Ok(layout) = ColumnLayout::from_sizes(&sizes) else {
        return;
    };
    let mut out = Vec::new();
    if layout.split(sample, &mut out).is_ok() {
        for (value, size) in out.iter().zip(&sizes) {
            if let Some(size) = size {
                assert_eq!(value.len() as u64, *size);
            }
        }
    }
});
