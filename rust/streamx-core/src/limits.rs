//! Bounds on allocations whose size comes from input (an index, a state dict, a setting).
//!
//! Rust aborts the whole process when an allocation fails, and Python cannot catch that, so
//! every size taken from input is checked here first: against overflow, and against the
//! machine's physical memory, which no legitimate plan or shard can exceed.

use std::sync::OnceLock;

use crate::{Error, Result};

/// Physical memory in bytes (`u64::MAX` where the platform cannot say).
pub fn physical_memory() -> u64 {
    static MEMORY: OnceLock<u64> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        // SAFETY: sysconf only reads system configuration; it has no memory preconditions.
        #[allow(unsafe_code)]
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        match (u64::try_from(pages), u64::try_from(page)) {
            (Ok(pages), Ok(page)) if pages > 0 && page > 0 => pages.saturating_mul(page),
            _ => u64::MAX,
        }
    })
}

/// The product of `factors`, or an [`Error::InvalidArgument`] naming `what` on overflow.
pub fn checked_product(factors: &[u64], what: &str) -> Result<u64> {
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| Error::InvalidArgument(format!("{what} overflows: {factors:?}")))
}

/// Fails with [`Error::InvalidArgument`] naming `what` unless `count` items of `item_bytes`
/// each fit in physical memory.
pub fn check_alloc(count: u64, item_bytes: u64, what: &str) -> Result<()> {
    let memory = physical_memory();
    match count.checked_mul(item_bytes) {
        Some(bytes) if bytes <= memory => Ok(()),
        _ => Err(Error::InvalidArgument(format!(
            "{what}: {count} items of {item_bytes} bytes need more than this machine's \
             {memory} bytes of memory"
        ))),
    }
}

/// Fails with [`Error::OutOfMemory`] naming `what` unless `bytes` can be allocated right
/// now: under an address-space limit (`ulimit -v`) physical memory is no bound, and a failed
/// allocation later would abort the process. The probe is reserved and freed at once.
pub fn probe_alloc(bytes: u64, what: &str) -> Result<()> {
    let fail = || {
        Error::OutOfMemory(format!(
            "{what}: cannot allocate {bytes} bytes (is the process under a memory limit?)"
        ))
    };
    let len = usize::try_from(bytes).map_err(|_| fail())?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(len).map_err(|_| fail())?;
    // Seen by the optimizer as used: an unused allocation may be elided, and assumed to work.
    std::hint::black_box(probe.as_ptr());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_and_memory_are_errors() {
        assert!(checked_product(&[u64::MAX, 2], "batch").is_err());
        assert_eq!(checked_product(&[3, 4], "batch").unwrap(), 12);
        assert!(check_alloc(u64::MAX / 4, 8, "ids").is_err());
        assert!(check_alloc(1 << 40, 8, "ids").is_err() || physical_memory() >= 8 << 40);
        assert!(check_alloc(1000, 8, "ids").is_ok());
        assert!(probe_alloc(1 << 20, "ids").is_ok());
        assert!(matches!(
            probe_alloc(u64::MAX / 2, "ids"),
            Err(Error::OutOfMemory(_))
        ));
    }
}
