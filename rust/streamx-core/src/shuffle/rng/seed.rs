//! numpy's `SeedSequence`, reduced to what `default_rng(int)` uses.

/// One round of `SeedSequence`'s hash, threading the running hash constant.
fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut v = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(0x931E_8875);
    v = v.wrapping_mul(*hash_const);
    v ^ (v >> 16)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = 0xCA01_F9DD_u32
        .wrapping_mul(x)
        .wrapping_sub(0x4973_F715_u32.wrapping_mul(y));
    r ^ (r >> 16)
}

/// `SeedSequence(seed).generate_state(4, np.uint64)` for a non-negative integer seed.
pub(super) fn seed_sequence_words(seed: u128) -> [u64; 4] {
    // numpy splits the integer into little-endian 32-bit words, always at least one.
    let mut entropy = Vec::with_capacity(4);
    let mut s = seed;
    loop {
        entropy.push((s & u128::from(u32::MAX)) as u32);
        s >>= 32;
        if s == 0 {
            break;
        }
    }
    let mut hash_const = 0x43B0_D7E5_u32;
    let mut pool = [0_u32; 4];
    for (i, slot) in pool.iter_mut().enumerate() {
        *slot = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                let h = hashmix(pool[src], &mut hash_const);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    for &word in entropy.iter().skip(4) {
        for slot in &mut pool {
            let h = hashmix(word, &mut hash_const);
            *slot = mix(*slot, h);
        }
    }
    let mut out_const = 0x8B51_F9DD_u32;
    let mut out = [0_u32; 8];
    for (i, o) in out.iter_mut().enumerate() {
        let mut v = pool[i % 4] ^ out_const;
        out_const = out_const.wrapping_mul(0x58F3_8DED);
        v = v.wrapping_mul(out_const);
        *o = v ^ (v >> 16);
    }
    std::array::from_fn(|i| u64::from(out[2 * i]) | (u64::from(out[2 * i + 1]) << 32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_sequence_matches_numpy() {
        // np.random.SeedSequence(0).generate_state(4, np.uint64)
        let want = [
            0xdb2c_d7e7_b0f4_78be,
            0xabf4_641a_2c71_ba49,
            0x20c6_ed6d_9d7b_8d41,
            0x2c40_99de_223c_39d4,
        ];
        assert_eq!(seed_sequence_words(0), want);
    }
}
