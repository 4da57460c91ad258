//! Decoding a fuzz input into ledger operations.

/// A reader over the input that yields zeroes once it runs out, so every input decodes.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A byte count: mostly small multiples of 16 (so that small limits bite), sometimes at the
/// edges of `u64`, where the ledger's arithmetic could wrap.
pub fn size(b: &mut Bytes) -> u64 {
    match b.u8() {
        255 => u64::MAX,
        254 => u64::MAX / 2 + 1,
        253 => u64::from(u32::MAX) + 1,
        x => u64::from(x) * 16,
    }
}

/// A shard id, one past the last included so that out-of-range ids are tried too.
fn shard(b: &mut Bytes, num_shards: usize) -> usize {
    usize::from(b.u8()) % (num_shards + 1)
}

/// One call on the ledger; `actor` is one of two independent openers (two "processes").
#[derive(Clone, Debug)]
pub enum Op {
    Pin {
        actor: usize,
        shard: usize,
    },
    Unpin {
        actor: usize,
        shard: usize,
    },
    Begin {
        actor: usize,
        shard: usize,
        bytes: u64,
        must_fit: bool,
    },
    Finish {
        actor: usize,
        shard: usize,
        bytes: u64,
    },
    Abort {
        actor: usize,
        shard: usize,
    },
    Sync {
        actor: usize,
        shard: usize,
        on_disk: Option<u64>,
    },
    Evict {
        shard: usize,
    },
    EvictColdest,
    TrimToLimit,
    Touch {
        shard: usize,
    },
    SetEvictable {
        start: usize,
        end: usize,
        evictable: bool,
    },
    Recover,
    /// The actor dies (its ledger and owner lock dropped) and opens the ledger again.
    Crash {
        actor: usize,
    },
    Snapshot,
}

impl Op {
    pub fn decode(b: &mut Bytes, n: usize) -> Op {
        // Bits 0-5: the operation; bit 6: a flag; bit 7: the actor.
        let code = b.u8();
        let actor = usize::from(code >> 7);
        match (code & 0x3f) % 14 {
            0 => Op::Pin {
                actor,
                shard: shard(b, n),
            },
            1 => Op::Unpin {
                actor,
                shard: shard(b, n),
            },
            k @ (2 | 3) => Op::Begin {
                actor,
                shard: shard(b, n),
                bytes: size(b),
                must_fit: k == 3,
            },
            4 => Op::Finish {
                actor,
                shard: shard(b, n),
                bytes: size(b),
            },
            5 => Op::Abort {
                actor,
                shard: shard(b, n),
            },
            6 => {
                let shard = shard(b, n);
                let on_disk = (b.u8() & 1 == 0).then(|| size(b));
                Op::Sync {
                    actor,
                    shard,
                    on_disk,
                }
            }
            7 => Op::Evict { shard: shard(b, n) },
            8 if code & 0x40 != 0 => Op::TrimToLimit,
            8 => Op::EvictColdest,
            9 => Op::Touch { shard: shard(b, n) },
            10 => {
                let (start, end) = (shard(b, n), shard(b, n));
                Op::SetEvictable {
                    start,
                    end,
                    evictable: code & 0x40 != 0,
                }
            }
            11 => Op::Recover,
            12 => Op::Crash { actor },
            _ => Op::Snapshot,
        }
    }
}
