//! The swaps of a shuffle's top steps, drawn now and applied later, once it is known how many
//! of them are needed.

use super::{Pcg64, M32};

/// The swap targets `shuffle` draws on `len` elements for its steps `len - 1` down to some
/// `stop`, top step first.
#[derive(Clone, Debug, Default)]
pub struct Swaps {
    /// The top step's index.
    top: usize,
    /// Targets of the steps above `u32::MAX` (only for slices longer than that).
    wide: Vec<u64>,
    /// Targets of the remaining steps, from `min(top, u32::MAX)` down.
    narrow: Vec<u32>,
}

impl Pcg64 {
    /// The swaps of `shuffle` on `len` elements down to step `stop`, with exactly the draws
    /// of the whole shuffle (the steps below `stop` are drawn and dropped).
    pub fn draw_swaps(&mut self, len: usize, stop: usize) -> Swaps {
        let swaps = self.top_swaps(len, stop);
        self.skip_shuffle(stop.max(1).min(len));
        swaps
    }

    /// The swaps of [`Pcg64::draw_swaps`], the generator dropped where they end: for a caller
    /// that needs nothing drawn after them, the steps below `stop` are not drawn at all.
    pub fn into_swaps(mut self, len: usize, stop: usize) -> Swaps {
        self.top_swaps(len, stop)
    }

    /// The swaps down to `stop`, the generator left after the last of them.
    fn top_swaps(&mut self, len: usize, stop: usize) -> Swaps {
        let stop = stop.max(1);
        let top = len.saturating_sub(1);
        let mut i = top;
        let mut wide = Vec::new();
        while i as u64 > M32 && i >= stop {
            wide.push(self.interval(i as u64));
            i -= 1;
        }
        let mut narrow = vec![0; (i + 1).saturating_sub(stop)];
        if !narrow.is_empty() {
            let count = narrow.len();
            self.scan_blocks(i as u32, count, Some(&mut narrow));
        }
        Swaps { top, wide, narrow }
    }
}

impl Swaps {
    /// Runs the steps down to `from` on `x` (the whole slice the swaps were drawn for), which
    /// leaves `x[from..]` as the whole shuffle does. `from` must not be below the `stop` drawn.
    pub fn apply<T>(&self, x: &mut [T], from: usize) {
        let steps = (self.top + 1).saturating_sub(from.max(1));
        let (wide, narrow) = (
            self.wide.len().min(steps),
            steps.saturating_sub(self.wide.len()),
        );
        assert!(narrow <= self.narrow.len(), "steps below the drawn ones");
        for (i, &j) in (0..=self.top).rev().zip(&self.wide[..wide]) {
            x.swap(i, j as usize);
        }
        let top = self.top - self.wide.len();
        for (i, &j) in (0..=top).rev().zip(&self.narrow[..narrow]) {
            x.swap(i, j as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applied_swaps_match_the_shuffle_and_its_draws() {
        for (len, stop, from) in [
            (0, 0, 0),
            (1, 0, 0),
            (2, 0, 0),
            (5, 3, 4),
            (300, 0, 0),
            (300, 1, 7),
            (300, 299, 299),
            (300, 300, 300),
            (70_000, 1234, 1234),
            (70_000, 1234, 60_000),
        ] {
            let mut a = Pcg64::new(len as u128 + 3);
            a.next_u32(); // a buffered half must carry through
            let mut b = a.clone();
            let mut x: Vec<usize> = (0..len).collect();
            let mut y = x.clone();
            a.shuffle(&mut x);
            b.draw_swaps(len, stop).apply(&mut y, from);
            assert_eq!(x[from..], y[from..], "len {len} stop {stop} from {from}");
            assert_eq!(a.next_u32(), b.next_u32(), "len {len} stop {stop}");
        }
    }
}
