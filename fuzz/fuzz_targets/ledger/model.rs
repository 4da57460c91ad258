//! What a ledger must hold after a sequence of calls from a valid start: a plain in-memory
//! model of every shard's state, bytes, pins and evictability, checked after each call.

use streamx_core::cache::{Decision, Ledger, LedgerSnapshot, ShardState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Remote,
    Preparing(usize),
    Local,
}

pub struct Model {
    pub state: Vec<State>,
    pub bytes: Vec<u64>,
    /// Pins per actor and shard.
    pub pins: [Vec<u32>; 2],
    pub evictable: Vec<bool>,
    pub limit: Option<u64>,
}

impl Model {
    pub fn new(n: usize, limit: Option<u64>) -> Self {
        Self {
            state: vec![State::Remote; n],
            bytes: vec![0; n],
            pins: [vec![0; n], vec![0; n]],
            evictable: vec![true; n],
            limit,
        }
    }

    pub fn n(&self) -> usize {
        self.state.len()
    }

    /// Bytes held by shards not `Remote`, summed without wrapping.
    pub fn usage(&self) -> u128 {
        (0..self.n())
            .filter(|&s| self.state[s] != State::Remote)
            .map(|s| u128::from(self.bytes[s]))
            .sum()
    }

    pub fn total_pins(&self, s: usize) -> u32 {
        self.pins[0][s] + self.pins[1][s]
    }

    pub fn set(&mut self, s: usize, state: State, bytes: u64) {
        self.state[s] = state;
        self.bytes[s] = bytes;
    }

    /// The shards eviction may take, least recently used first (ties to the lowest id).
    fn candidates(&self, ledger: &Ledger, except: usize) -> Vec<usize> {
        let mut c: Vec<usize> = (0..self.n())
            .filter(|&s| s != except && self.state[s] == State::Local)
            .filter(|&s| self.total_pins(s) == 0 && self.evictable[s])
            .collect();
        c.sort_by_key(|&s| (ledger.last_access(s).unwrap(), s));
        c
    }

    pub fn coldest(&self, ledger: &Ledger) -> Option<usize> {
        self.candidates(ledger, usize::MAX).first().copied()
    }

    /// What `begin_download` must decide for a `Remote` shard: the victims, and whether the
    /// shard then fits under the limit.
    pub fn victims(&self, ledger: &Ledger, shard: usize, needed: u64) -> (Vec<usize>, bool) {
        let Some(limit) = self.limit else {
            return (Vec::new(), true);
        };
        let usage = u64::try_from(self.usage()).expect("usage checked to fit before");
        let fits = |freed: u64| usage.saturating_sub(freed).saturating_add(needed) <= limit;
        let (mut victims, mut freed) = (Vec::new(), 0u64);
        if fits(0) {
            return (victims, true);
        }
        for s in self.candidates(ledger, shard) {
            victims.push(s);
            freed += self.bytes[s];
            if fits(freed) {
                return (victims, true);
            }
        }
        (victims, false)
    }

    /// Whether shard `s` holding `bytes` would take the byte count past `u64::MAX`, which
    /// the ledger must refuse.
    pub fn overflows(&self, s: usize, bytes: u64) -> bool {
        let held = if self.state[s] == State::Remote {
            0
        } else {
            self.bytes[s]
        };
        self.usage() - u128::from(held) + u128::from(bytes) > u128::from(u64::MAX)
    }

    /// The decision `begin_download` must return (`Err` for a refusal), before any change.
    pub fn expect_begin(
        &self,
        ledger: &Ledger,
        s: usize,
        bytes: u64,
        must_fit: bool,
    ) -> Result<Option<Decision>, ()> {
        Ok(match self.state[s] {
            State::Local => Some(Decision::AlreadyLocal),
            State::Preparing(_) => Some(Decision::WaitForOther {
                owner_pid: std::process::id(),
            }),
            State::Remote if self.overflows(s, bytes) => return Err(()),
            State::Remote => {
                let (evicted, fits) = self.victims(ledger, s, bytes);
                (fits || !must_fit).then_some(Decision::Download { evicted })
            }
        })
    }

    /// Panics unless the ledger (seen through any actor) agrees with the model.
    pub fn check(&self, ledger: &Ledger, files: &[std::path::PathBuf]) {
        assert_eq!(u128::from(ledger.usage()), self.usage(), "usage");
        assert_eq!(ledger.limit(), self.limit, "limit");
        for s in 0..self.n() {
            let state = match self.state[s] {
                State::Remote => ShardState::Remote,
                State::Preparing(_) => ShardState::Preparing,
                State::Local => ShardState::Local,
            };
            assert_eq!(ledger.state(s).unwrap(), state, "shard {s} state");
            assert_eq!(ledger.bytes(s).unwrap(), self.bytes[s], "shard {s} bytes");
            assert_eq!(
                ledger.pins(s).unwrap(),
                self.total_pins(s),
                "shard {s} pins"
            );
            assert_eq!(
                ledger.is_evictable(s).unwrap(),
                self.evictable[s],
                "shard {s} evictable"
            );
            if state == ShardState::Local {
                assert!(
                    files[s].exists(),
                    "shard {s} is local but its file was deleted"
                );
            }
        }
    }

    pub fn check_snapshot(&self, snap: &LedgerSnapshot) {
        assert_eq!(u128::from(snap.usage), self.usage(), "snapshot usage");
        assert_eq!(snap.shards.len(), self.n());
        for (s, shard) in snap.shards.iter().enumerate() {
            assert_eq!(shard.bytes, self.bytes[s], "snapshot bytes");
            assert_eq!(shard.pins, self.total_pins(s), "snapshot pins");
            assert_eq!(shard.evictable, self.evictable[s], "snapshot evictable");
            if let Some((_, alive)) = shard.owner {
                assert!(alive, "snapshot: a live owner seen dead");
            }
            let held: u32 = snap
                .pins
                .iter()
                .filter(|p| p.shard == s)
                .map(|p| p.count)
                .sum();
            assert_eq!(held, self.total_pins(s), "snapshot pin slots");
        }
    }
}
