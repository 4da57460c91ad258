//! `fresh::populate` maps in at most what the input can fill, read from the kernel's own
//! record of the buffer's pages (`mincore`), so other tests' memory running beside it in this
//! process cannot sway the count.

const PAGE: usize = 4096;

/// Resident bytes among the whole pages of `v`'s spare capacity.
fn resident_spare(v: &mut Vec<u8>) -> usize {
    let spare = v.spare_capacity_mut();
    let start = (spare.as_mut_ptr() as usize).next_multiple_of(PAGE);
    let end = (spare.as_mut_ptr() as usize + spare.len()) / PAGE * PAGE;
    let mut pages = vec![0_u8; (end - start) / PAGE];
    // SAFETY: `[start, end)` is page-aligned and inside the live allocation `v` holds; mincore
    // only writes one byte per page into `pages`, which has exactly that many.
    #[allow(unsafe_code)]
    let done =
        unsafe { libc::mincore(start as *mut libc::c_void, end - start, pages.as_mut_ptr()) };
    assert_eq!(done, 0, "mincore failed");
    pages.iter().filter(|&&p| p & 1 == 1).count() * PAGE
}

#[test]
fn fresh_memory_is_faulted_in_only_up_to_what_the_input_can_fill() {
    // A header may declare a gigabyte over a few bytes: only the bound is touched.
    let mut v: Vec<u8> = Vec::with_capacity(256 << 20);
    let untouched = resident_spare(&mut v);
    super::fresh::populate(&mut v, 1 << 20);
    let bounded = resident_spare(&mut v);
    assert!(
        bounded <= (1 << 20) + untouched,
        "{bounded} bytes resident for a 1 MiB bound"
    );
    super::fresh::populate(&mut v, usize::MAX);
    let whole = resident_spare(&mut v);
    assert!(
        whole >= 255 << 20,
        "{whole} bytes resident after the whole 256 MiB"
    );
}
