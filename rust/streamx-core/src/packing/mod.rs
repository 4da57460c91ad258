//! Token packing decisions over document lengths: which bin (packed sequence) each document
//! goes to. Only lengths cross the boundary; tokens are moved by the caller in bulk.

use std::collections::BTreeMap;

/// Best-fit decreasing over one buffer of documents: documents are placed longest first,
/// each into the open bin whose free space is the smallest that still holds it. Returns the
/// bin of each document (in input order) and the number of bins; bins are numbered in the
/// order they were opened. A document longer than `capacity` is an error naming its index.
pub fn best_fit(lengths: &[u64], capacity: u64) -> Result<(Vec<u32>, u32), String> {
    if capacity == 0 {
        return Err("capacity must be at least 1".to_string());
    }
    if let Some((i, len)) = lengths.iter().enumerate().find(|(_, &l)| l > capacity) {
        return Err(format!(
            "document {i} has {len} tokens, more than the sequence length {capacity}"
        ));
    }
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    // Stable, so equal lengths keep their input order: the result depends only on the input.
    order.sort_by(|&a, &b| lengths[b].cmp(&lengths[a]));
    // free space -> bins with that free space (lowest bin id first).
    let mut free: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let mut bins: u32 = 0;
    let mut out = vec![0u32; lengths.len()];
    for i in order {
        let len = lengths[i];
        // The open bin with the least room that still holds the document, else a new one.
        let found = free.range(len..).next().map(|(&space, _)| space);
        let mut placed = None;
        if let Some(space) = found {
            if let Some(list) = free.get_mut(&space) {
                let bin = list.remove(0);
                if list.is_empty() {
                    free.remove(&space);
                }
                placed = Some((bin, space));
            }
        }
        let (bin, space) = placed.unwrap_or_else(|| {
            bins += 1;
            (bins - 1, capacity)
        });
        out[i] = bin;
        let left = space - len;
        if left > 0 {
            let list = free.entry(left).or_default();
            let at = list.partition_point(|&b| b < bin);
            list.insert(at, bin);
        }
    }
    Ok((out, bins))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_and_never_overflows() {
        let lens = [5u64, 3, 7, 2, 8, 1, 4];
        let (bins, n) = best_fit(&lens, 10).unwrap();
        let mut used = vec![0u64; n as usize];
        for (i, &b) in bins.iter().enumerate() {
            used[b as usize] += lens[i];
        }
        assert!(used.iter().all(|&u| u <= 10));
        assert_eq!(n, 3);
    }

    #[test]
    fn too_long_is_an_error() {
        assert!(best_fit(&[11], 10).unwrap_err().contains("document 0"));
        assert!(best_fit(&[1], 0).is_err());
    }
}
