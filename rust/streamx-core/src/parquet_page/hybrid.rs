//! Parquet's RLE / bit-packed hybrid encoding, used by definition levels and dictionary
//! indices: runs of one repeated value and groups of eight bit-packed values.

/// A run of the hybrid encoding: `n` copies of one value, or `n` values bit-packed.
#[derive(Debug, Clone, Copy)]
pub enum Run<'a> {
    Repeat(u32, usize),
    Packed(&'a [u8], usize),
}

/// Decodes `count` values of `bit_width` bits from `bytes`, calling `out` with each.
/// Values past `count` in a last bit-packed group are padding and ignored.
pub fn decode(
    bytes: &[u8],
    bit_width: u32,
    count: usize,
    out: &mut impl FnMut(u32) -> Result<(), String>,
) -> Result<(), String> {
    runs(bytes, bit_width, count, &mut |run| match run {
        Run::Repeat(value, n) => (0..n).try_for_each(|_| out(value)),
        Run::Packed(packed, n) => unpack(packed, bit_width, n, out),
    })
}

/// Appends `count` values of `bit_width` bits from `bytes` to `out`, each checked to be
/// below `bound`: the whole runs at once, no call per value (a page's dictionary indices).
pub fn decode_into(
    bytes: &[u8],
    bit_width: u32,
    count: usize,
    bound: u32,
    out: &mut Vec<u32>,
) -> Result<(), String> {
    let too_big = |value: u32| format!("index {value} in a dictionary of {bound}");
    runs(bytes, bit_width, count, &mut |run| match run {
        Run::Repeat(value, n) => {
            if value >= bound {
                return Err(too_big(value));
            }
            out.extend(std::iter::repeat_n(value, n));
            Ok(())
        }
        Run::Packed(packed, n) => {
            let from = out.len();
            unpack_into(packed, bit_width, n, out)?;
            match out[from..].iter().find(|v| **v >= bound) {
                Some(value) => Err(too_big(*value)),
                None => Ok(()),
            }
        }
    })
}

/// The runs holding `count` values of `bit_width` bits in `bytes`, in order, each cut to
/// the values left (a last bit-packed group's padding is not counted).
pub fn runs(
    bytes: &[u8],
    bit_width: u32,
    count: usize,
    out: &mut impl FnMut(Run<'_>) -> Result<(), String>,
) -> Result<(), String> {
    if bit_width > 32 {
        return Err(format!("a bit width of {bit_width} (at most 32)"));
    }
    let mut at = 0usize;
    let mut left = count;
    while left > 0 {
        let header = varint(bytes, &mut at)?;
        if header & 1 == 0 {
            let run = usize::try_from(header >> 1).unwrap_or(usize::MAX).min(left);
            let width = bit_width.div_ceil(8) as usize;
            let raw = bytes
                .get(at..at + width)
                .ok_or("an RLE run past the end of its page")?;
            at += width;
            let mut value = 0u32;
            for (k, b) in raw.iter().enumerate() {
                value |= u32::from(*b) << (8 * k);
            }
            if bit_width < 32 && value >> bit_width != 0 {
                return Err(format!("an RLE value {value} wider than {bit_width} bits"));
            }
            out(Run::Repeat(value, run))?;
            left -= run;
        } else {
            let groups = usize::try_from(header >> 1).unwrap_or(usize::MAX);
            let length = groups
                .checked_mul(bit_width as usize)
                .filter(|n| *n <= bytes.len() - at)
                .ok_or("a bit-packed run past the end of its page")?;
            let packed = &bytes[at..at + length];
            at += length;
            let values = (groups.saturating_mul(8)).min(left);
            out(Run::Packed(packed, values))?;
            left -= values;
        }
    }
    Ok(())
}

/// The first `values` values of `bit_width` bits packed least significant bit first.
fn unpack(
    packed: &[u8],
    bit_width: u32,
    values: usize,
    out: &mut impl FnMut(u32) -> Result<(), String>,
) -> Result<(), String> {
    if bit_width == 0 {
        for _ in 0..values {
            out(0)?;
        }
        return Ok(());
    }
    let mask = if bit_width == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << bit_width) - 1
    };
    let mut buffer = 0u64;
    let mut held = 0u32;
    let mut bytes = packed.iter();
    for _ in 0..values {
        while held < bit_width {
            // The caller checked `packed` holds `groups * bit_width` bytes: 8 values each.
            let b = bytes.next().ok_or("a bit-packed run past its bytes")?;
            buffer |= u64::from(*b) << held;
            held += 8;
        }
        out((buffer & mask) as u32)?;
        buffer >>= bit_width;
        held -= bit_width;
    }
    Ok(())
}

/// [`unpack`] appending to `out`: each value read from the 8 bytes holding its first bit
/// (a shift and a mask, no call and no carried state per value: a page's dictionary
/// indices, tens of thousands per row group).
fn unpack_into(
    packed: &[u8],
    bit_width: u32,
    values: usize,
    out: &mut Vec<u32>,
) -> Result<(), String> {
    let width = bit_width as usize;
    if values.saturating_mul(width).div_ceil(8) > packed.len() {
        return Err("a bit-packed run past its bytes".to_owned());
    }
    let mask = if bit_width == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << bit_width) - 1
    };
    // The values whose 8 bytes lie inside `packed`; the last few are read from a copy.
    let whole = (packed.len().saturating_sub(7) * 8)
        .div_ceil(width.max(1))
        .min(values);
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
    out.extend((0..whole).map(|k| {
        let bit = k * width;
        let at = bit / 8;
        ((word(&packed[at..at + 8]) >> (bit % 8)) & mask) as u32
    }));
    for k in whole..values {
        let bit = k * width;
        let mut tail = [0u8; 8];
        let rest = &packed[(bit / 8).min(packed.len())..];
        let n = rest.len().min(8);
        tail[..n].copy_from_slice(&rest[..n]);
        out.push(((u64::from_le_bytes(tail) >> (bit % 8)) & mask) as u32);
    }
    Ok(())
}

/// An unsigned LEB128 varint at `*at` (at most five bytes: a run header is 32 bits).
fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..35).step_by(7) {
        let b = *bytes
            .get(*at)
            .ok_or("a run header past the end of its page")?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a run header longer than five bytes".to_owned())
}
