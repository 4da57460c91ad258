//! File digests recorded in `index.json`, named and formatted exactly like Python's
//! `hashlib`/`xxhash` `hexdigest()`.

use std::path::Path;

use sha2::Digest;

use crate::error::{Error, Result};
use crate::mmap::MappedFile;

/// A hash algorithm mosaicml-streaming accepts. Variants (and `Ord`) follow Python's sorted
/// name order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashAlgo {
    /// `BLAKE2b` with hashlib's default 64-byte digest.
    Blake2b,
    /// `BLAKE2s` with hashlib's default 32-byte digest.
    Blake2s,
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA3-224.
    Sha3_224,
    /// SHA3-256.
    Sha3_256,
    /// SHA3-384.
    Sha3_384,
    /// SHA3-512.
    Sha3_512,
    /// SHA-512.
    Sha512,
    /// python-xxhash's `xxh128`, which is XXH3-128, seed 0.
    Xxh128,
    /// xxHash32, seed 0.
    Xxh32,
    /// XXH3-128, seed 0.
    Xxh3_128,
    /// XXH3-64, seed 0.
    Xxh3_64,
    /// xxHash64, seed 0.
    Xxh64,
}

const ALL: [HashAlgo; 17] = [
    HashAlgo::Blake2b,
    HashAlgo::Blake2s,
    HashAlgo::Md5,
    HashAlgo::Sha1,
    HashAlgo::Sha224,
    HashAlgo::Sha256,
    HashAlgo::Sha384,
    HashAlgo::Sha3_224,
    HashAlgo::Sha3_256,
    HashAlgo::Sha3_384,
    HashAlgo::Sha3_512,
    HashAlgo::Sha512,
    HashAlgo::Xxh128,
    HashAlgo::Xxh32,
    HashAlgo::Xxh3_128,
    HashAlgo::Xxh3_64,
    HashAlgo::Xxh64,
];

/// Python's `sorted()` order, which writers require for the `hashes` argument.
const NAMES: [&str; 17] = [
    "blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384", "sha3_224", "sha3_256",
    "sha3_384", "sha3_512", "sha512", "xxh128", "xxh32", "xxh3_128", "xxh3_64", "xxh64",
];

/// The 17 algorithm names, sorted as Python sorts them.
pub fn all_hash_names() -> &'static [&'static str] {
    &NAMES
}

impl HashAlgo {
    /// Looks up an algorithm by its Python name.
    pub fn from_name(name: &str) -> Result<HashAlgo> {
        NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| ALL[i])
            .ok_or_else(|| Error::InvalidArgument(format!("Invalid hash algorithm: {name}")))
    }

    /// The Python name.
    pub fn name(self) -> &'static str {
        // `ALL` lists the variants in declaration order.
        NAMES[self as usize]
    }

    /// Lowercase hex digest of `data`, equal to Python's `hexdigest()`.
    pub fn hexdigest(self, data: &[u8]) -> String {
        use xxhash_rust::{xxh3, xxh32, xxh64};
        match self {
            HashAlgo::Blake2b => hex::encode(blake2::Blake2b512::digest(data)),
            HashAlgo::Blake2s => hex::encode(blake2::Blake2s256::digest(data)),
            HashAlgo::Md5 => hex::encode(md5::Md5::digest(data)),
            HashAlgo::Sha1 => hex::encode(sha1::Sha1::digest(data)),
            HashAlgo::Sha224 => hex::encode(sha2::Sha224::digest(data)),
            HashAlgo::Sha256 => hex::encode(sha2::Sha256::digest(data)),
            HashAlgo::Sha384 => hex::encode(sha2::Sha384::digest(data)),
            HashAlgo::Sha512 => hex::encode(sha2::Sha512::digest(data)),
            HashAlgo::Sha3_224 => hex::encode(sha3::Sha3_224::digest(data)),
            HashAlgo::Sha3_256 => hex::encode(sha3::Sha3_256::digest(data)),
            HashAlgo::Sha3_384 => hex::encode(sha3::Sha3_384::digest(data)),
            HashAlgo::Sha3_512 => hex::encode(sha3::Sha3_512::digest(data)),
            // xxhash's hexdigest() is the big-endian hex of the integer, zero-padded.
            HashAlgo::Xxh32 => format!("{:08x}", xxh32::xxh32(data, 0)),
            HashAlgo::Xxh64 => format!("{:016x}", xxh64::xxh64(data, 0)),
            HashAlgo::Xxh3_64 => format!("{:016x}", xxh3::xxh3_64(data)),
            HashAlgo::Xxh128 | HashAlgo::Xxh3_128 => format!("{:032x}", xxh3::xxh3_128(data)),
        }
    }
}

/// Hex digest of the file at `path`, read through a memory map (no copy into the heap).
pub fn hash_file(path: &Path, algo: HashAlgo) -> Result<String> {
    let map = MappedFile::open(path)?;
    let digest = algo.hexdigest(map.as_slice());
    map.check(path)?;
    Ok(digest)
}

/// Checks the file at `path` against the hex digest `expected` recorded in an index.
///
/// # Errors
/// [`Error::ChecksumMismatch`] if the digests differ; I/O errors as [`hash_file`].
pub fn verify_file(path: &Path, algo: HashAlgo, expected: &str) -> Result<()> {
    if hash_file(path, algo)? == expected {
        Ok(())
    } else {
        Err(Error::ChecksumMismatch {
            path: path.to_owned(),
        })
    }
}
