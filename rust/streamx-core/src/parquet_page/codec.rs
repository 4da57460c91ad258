//! A page's values decompressed into a buffer of the size its header declares: the codecs
//! of `parquet.thrift`'s `CompressionCodec` that the core already links.

use std::io::Read;

/// The page codecs this reader decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Uncompressed,
    Snappy,
    Gzip,
    Zstd,
}

impl Codec {
    /// From `CompressionCodec`'s number; `None` for the codecs left to the general reader.
    pub fn from_code(code: i32) -> Option<Self> {
        Some(match code {
            0 => Codec::Uncompressed,
            1 => Codec::Snappy,
            2 => Codec::Gzip,
            6 => Codec::Zstd,
            _ => return None,
        })
    }
}

/// Fills `out` exactly with `input` decompressed; an error if it decompresses to any other
/// length or does not decompress.
pub fn decompress_into(codec: Codec, input: &[u8], out: &mut [u8]) -> Result<(), String> {
    let expected = out.len();
    let got = match codec {
        Codec::Uncompressed => {
            if input.len() != expected {
                return Err(format!(
                    "{} bytes of values, the header says {expected}",
                    input.len()
                ));
            }
            out.copy_from_slice(input);
            expected
        }
        Codec::Snappy => {
            let declared = snap::raw::decompress_len(input).map_err(|e| format!("snappy: {e}"))?;
            if declared != expected {
                return Err(format!(
                    "snappy data of {declared} bytes, the header says {expected}"
                ));
            }
            snap::raw::Decoder::new()
                .decompress(input, out)
                .map_err(|e| format!("snappy: {e}"))?
        }
        Codec::Zstd => zstd::bulk::Decompressor::new()
            .and_then(|mut d| d.decompress_to_buffer(input, out))
            .map_err(|e| format!("zstd: {e}"))?,
        Codec::Gzip => {
            let mut reader = flate2::read::MultiGzDecoder::new(input);
            let mut filled = 0;
            while filled < expected {
                match reader.read(&mut out[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) => return Err(format!("gzip: {e}")),
                }
            }
            let mut extra = [0u8; 1];
            if filled == expected && matches!(reader.read(&mut extra), Ok(n) if n > 0) {
                return Err(format!(
                    "gzip data longer than the {expected} bytes declared"
                ));
            }
            filled
        }
    };
    if got != expected {
        return Err(format!(
            "{got} bytes decompressed, the header says {expected}"
        ));
    }
    Ok(())
}
