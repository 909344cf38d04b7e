//! NUMA memory policy and page placement: `mbind` a range to one node,
//! and ask where pages live (`move_pages` with no target: a query). Raw
//! system calls, as glibc has no wrapper (libnuma has, but is not needed
//! for two calls).

/// `mbind`'s mode that allocates only on the given nodes (`<linux/mempolicy.h>`).
const MPOL_BIND: libc::c_int = 2;

/// A node mask with only `node` set, one spare word (the kernel reads one
/// bit fewer than it is told).
pub fn node_mask(node: u32) -> Vec<libc::c_ulong> {
    let bits = libc::c_ulong::BITS as usize;
    let n = node as usize;
    let mut mask = vec![0 as libc::c_ulong; n / bits + 2];
    mask[n / bits] |= 1 << (n % bits);
    mask
}

/// Binds the pages of `len` bytes at address `addr` (a mapping of this
/// process, not yet touched) to `node` with `MPOL_BIND`: pages touched
/// later are allocated there or not at all. The kernel checks the range.
pub fn bind(addr: usize, len: usize, node: u32) -> std::io::Result<()> {
    let mask = node_mask(node);
    let max_node = (mask.len() * 64) as libc::c_ulong;
    // SAFETY: the caller's range is its own mapping; the mask outlives the
    // call and holds `max_node` bits.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            max_node,
            0 as libc::c_uint,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The node of each page of this process at `pages` (`move_pages` with no
/// target nodes: a query), or a negative errno for a page it could not
/// place (`-ENOENT`, -2, for a page not present).
pub fn query_nodes(pages: &[usize]) -> std::io::Result<Vec<i32>> {
    let ptrs: Vec<*mut libc::c_void> = pages.iter().map(|&p| p as *mut libc::c_void).collect();
    let mut status = vec![i32::MIN; pages.len()];
    // SAFETY: `ptrs` and `status` hold `pages.len()` entries each; a null
    // node list asks without moving anything.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_int,
            ptrs.len() as libc::c_ulong,
            ptrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_sets_one_bit_with_a_spare_word() {
        assert_eq!(node_mask(0), vec![1, 0]);
        assert_eq!(node_mask(65), vec![0, 2, 0]);
    }

    #[test]
    fn a_touched_page_is_on_a_node_and_an_untouched_one_is_not_present() {
        if crate::emulation_exception("qemu-user 7.2 has no move_pages (ENOSYS)") {
            return;
        }
        let mut v = vec![0u8; 1 << 16];
        v[0] = 1;
        let s = query_nodes(&[v.as_ptr() as usize]).unwrap();
        assert!(s[0] >= 0, "{s:?}");
    }
}
