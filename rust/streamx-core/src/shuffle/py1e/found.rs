//! What one pass over a node's indices finds for a piece: the samples whose jittered
//! positions lie in its bounds, and how many lie before them. Its own module so that the
//! scalar pass (`pick`) and the AVX-512 one (`pick_wide`, built where the CPU's intrinsics
//! are stable) both build on it without naming each other.

/// The samples at `p0..p1`, in node index order, and how many sort before `p0`.
pub(super) struct Found {
    pub(super) before: usize,
    pub(super) indices: Vec<i64>,
    pub(super) positions: Vec<f64>,
}

/// Indices a pass compares at once: their positions are laid out apart from the count, and the
/// kept ones gathered without a branch, so nothing of the loop waits on memory or a guess.
pub(super) const LANE: usize = 256;
