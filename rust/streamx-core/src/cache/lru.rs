//! Victim selection for the cache: pure logic, no I/O.

/// A shard that may be evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Shard id.
    pub shard: usize,
    /// Last access in nanoseconds since the Unix epoch (0 = never).
    pub last_access: u64,
    /// Bytes its files occupy.
    pub bytes: u64,
}

/// The outcome of [`select_victims`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Shards to evict, least recently used first.
    pub victims: Vec<usize>,
    /// Bytes the victims free.
    pub freed: u64,
    /// Whether `usage - freed + needed <= limit` after evicting them.
    pub fits: bool,
}

/// Picks the least recently used candidates (ties broken by shard id, so the choice is
/// deterministic) until `needed` more bytes fit under `limit`. When even evicting every
/// candidate is not enough, all of them are returned and `fits` is false.
pub fn select_victims(
    mut candidates: Vec<Candidate>,
    usage: u64,
    needed: u64,
    limit: u64,
) -> Selection {
    let fits = |freed: u64| usage.saturating_sub(freed).saturating_add(needed) <= limit;
    let mut selection = Selection {
        fits: fits(0),
        ..Selection::default()
    };
    if selection.fits {
        return selection;
    }
    candidates.sort_unstable_by_key(|c| (c.last_access, c.shard));
    for candidate in candidates {
        selection.victims.push(candidate.shard);
        selection.freed += candidate.bytes;
        if fits(selection.freed) {
            selection.fits = true;
            break;
        }
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn candidates() -> impl Strategy<Value = Vec<Candidate>> {
        prop::collection::vec((0u64..50, 1u64..1000), 0..40).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(shard, (last_access, bytes))| Candidate {
                    shard,
                    last_access,
                    bytes,
                })
                .collect()
        })
    }

    #[test]
    fn nothing_evicted_when_it_fits() {
        let c = vec![Candidate {
            shard: 0,
            last_access: 1,
            bytes: 10,
        }];
        assert_eq!(select_victims(c, 10, 5, 15).victims, Vec::<usize>::new());
    }

    #[test]
    fn oldest_first_with_id_tie_break() {
        let c = vec![
            Candidate {
                shard: 2,
                last_access: 5,
                bytes: 10,
            },
            Candidate {
                shard: 1,
                last_access: 5,
                bytes: 10,
            },
            Candidate {
                shard: 0,
                last_access: 9,
                bytes: 10,
            },
        ];
        let s = select_victims(c, 30, 10, 25);
        assert_eq!(s.victims, vec![1, 2]);
        assert!(s.fits);
    }

    proptest! {
        #[test]
        fn victims_are_a_minimal_lru_prefix(
            cands in candidates(), extra in 0u64..5000, needed in 0u64..3000, limit in 0u64..20000,
        ) {
            let usage = cands.iter().map(|c| c.bytes).sum::<u64>() + extra;
            let s = select_victims(cands.clone(), usage, needed, limit);
            let mut order = cands.clone();
            order.sort_by_key(|c| (c.last_access, c.shard));
            let prefix: Vec<usize> = order.iter().take(s.victims.len()).map(|c| c.shard).collect();
            prop_assert_eq!(&s.victims, &prefix);
            let freed: u64 = order.iter().take(s.victims.len()).map(|c| c.bytes).sum();
            prop_assert_eq!(s.freed, freed);
            let fits = |f: u64| usage.saturating_sub(f) + needed <= limit;
            prop_assert_eq!(s.fits, fits(freed));
            if s.fits && !s.victims.is_empty() {
                // One victim fewer would not have been enough.
                let last = order[s.victims.len() - 1].bytes;
                prop_assert!(!fits(freed - last));
            }
            if !s.fits {
                prop_assert_eq!(s.victims.len(), cands.len());
            }
        }
    }
}
