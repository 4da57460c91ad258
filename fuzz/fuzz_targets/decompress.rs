//! Every decompressor under its size limit. The first byte picks the codec, the next two the
//! bound (0 to 16 KiB, to the byte, so the fuzzer can sit on the boundary); the rest is the
//! compressed stream. No output may pass the bound, and the bound must be exact: an output
//! of `n` bytes decodes again under a bound of `n` to the same bytes, and fails under `n - 1`
//! (a codec that swallowed the refusal would truncate silently).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use streamx_core::compression::Compression;

const CODECS: [&str; 5] = ["br", "bz2", "gz", "snappy", "zstd"];
/// Small bounds keep each run fast; the cut-off logic is the same at any size.
const MAX_LIMIT: u64 = 16 << 10;

fuzz_target!(|data: &[u8]| {
    let [pick, lo, hi, packed @ ..] = data else {
        return;
    };
    let codec = Compression::parse(CODECS[usize::from(*pick) % CODECS.len()]).unwrap();
    let limit = u64::from(u16::from_le_bytes([*lo, *hi])) % (MAX_LIMIT + 1);
    let path = Path::new("fuzz");
    let Ok(out) = codec.decompress_limited(packed, limit, path) else {
        return;
    };
    let n = out.len() as u64;
    assert!(
        n <= limit,
        "{codec}: {n} bytes out under a bound of {limit}"
    );
    if n < limit {
        let again = codec.decompress_limited(packed, n, path);
        assert_eq!(
            again.ok().as_deref(),
            Some(&out[..]),
            "{codec}: exact bound {n}"
        );
    }
    if n > 0 {
        let short = codec.decompress_limited(packed, n - 1, path);
        assert!(
            short.is_err(),
            "{codec}: {n} bytes passed a bound of {}",
            n - 1
        );
    }
});
