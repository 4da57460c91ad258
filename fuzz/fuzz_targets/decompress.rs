//! Every decompressor under its size limit: the first byte picks the codec and the bound,
//! and no output may ever pass the bound.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use streamx_core::compression::Compression;

const CODECS: [&str; 5] = ["br", "bz2", "gz", "snappy", "zstd"];

fuzz_target!(|data: &[u8]| {
    let (&pick, packed) = data.split_first().unwrap_or((&0, &[]));
    let codec = Compression::parse(CODECS[usize::from(pick) % CODECS.len()]).unwrap();
    // Bounds from 0 to 64 KiB keep each run fast while still exercising the cut-off.
    let limit = u64::from(pick / 5) * 1321;
    if let Ok(out) = codec.decompress_limited(packed, limit, Path::new("fuzz")) {
        assert!(out.len() as u64 <= limit);
    }
});
