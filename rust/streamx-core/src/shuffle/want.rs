//! What each canonical node's part of a partial shuffle must produce, and how its values
//! are collected.

/// What one canonical node's part of the order must produce.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Want<'a> {
    /// Nothing; the node's draws are still made if a later node is wanted.
    Skip,
    /// Every position.
    All,
    /// The values at these offsets into the node's part, sorted and unique.
    At(&'a [usize]),
}

impl Want<'_> {
    /// Whether any offset in `from..to` is wanted.
    pub(crate) fn any_in(self, from: usize, to: usize) -> bool {
        match self {
            Want::Skip => false,
            Want::All => from < to,
            Want::At(offsets) => {
                let i = offsets.partition_point(|&o| o < from);
                i < offsets.len() && offsets[i] < to
            }
        }
    }

    /// The index of the last wanted node, plus one (0 if none).
    pub(crate) fn end(wants: &[Want<'_>]) -> usize {
        wants
            .iter()
            .rposition(|w| !matches!(w, Want::Skip))
            .map_or(0, |k| k + 1)
    }
}

/// Collects a node's wanted values from consecutive chunks of its part, in order.
pub(crate) struct Picker<'a> {
    want: Want<'a>,
    next: usize,
    out: Vec<i64>,
}

impl<'a> Picker<'a> {
    pub(crate) fn new(want: Want<'a>) -> Self {
        Picker {
            want,
            next: 0,
            out: Vec::new(),
        }
    }

    /// Takes the wanted values of `chunk`, which holds the part's offsets `from..`.
    pub(crate) fn take(&mut self, from: usize, chunk: &[i64]) {
        match self.want {
            Want::Skip => {}
            Want::All => self.out.extend_from_slice(chunk),
            Want::At(offsets) => {
                while self.next < offsets.len() && offsets[self.next] < from + chunk.len() {
                    self.out.push(chunk[offsets[self.next] - from]);
                    self.next += 1;
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<i64> {
        self.out
    }
}

/// Per canonical node, the wanted values (in offset order), or `None` for skipped nodes.
pub(crate) type Parts = Vec<Option<Vec<i64>>>;
