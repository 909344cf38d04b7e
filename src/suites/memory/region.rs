//! Anonymous memory for the memory benchmarks: mapped with the page size
//! asked for (4 KiB pages, transparent huge pages, or whatever the system
//! gives), aligned to a huge page, touched before use so that page faults
//! are never timed, and unmapped on drop.
//!
//! Why not a `Vec`: the latency curve must tell TLB steps from cache
//! levels, which needs control over huge pages (`madvise`) and a check of
//! what the kernel really did (`/proc/self/smaps`).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;

use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mmap_anonymous, munmap};

use serde_json::json;

use crate::harness::PrepareError;
use crate::os::mempool;

/// Huge page size when the kernel does not say (x86_64 and most aarch64 kernels).
const DEFAULT_HUGE_PAGE: usize = 2 << 20;

/// Which pages back a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// No advice: what an ordinary program gets (depends on the THP setting).
    Default,
    /// Base pages only (`MADV_NOHUGEPAGE`), usually 4 KiB.
    Small,
    /// Transparent huge pages requested (`MADV_HUGEPAGE`).
    Huge,
}

impl Pages {
    /// The name recorded with results.
    pub fn name(self) -> &'static str {
        match self {
            Pages::Default => "default",
            Pages::Small => "4KiB",
            Pages::Huge => "thp",
        }
    }
}

/// A mapped, touched, huge-page-aligned block of anonymous memory.
pub struct Region {
    base: NonNull<c_void>,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
    /// Bytes from `ptr` faulted in when it goes back to the process's pool
    /// ([`crate::os::mempool`]); `None`: unmapped on drop.
    pooled: Option<usize>,
    pages: Pages,
    /// The share backed by huge pages, once measured.
    huge_share: std::cell::Cell<Option<f64>>,
}

/// Faults in the pages of `ptr..ptr+len` for writing in one call
/// (`MADV_POPULATE_WRITE`, Linux 5.14), from the calling thread, so first
/// touch places them as a write would; a partial page at either end is left
/// to the caller's writes. False where the kernel lacks it: the caller's
/// writes then fault the pages in as usual.
///
/// # Safety
/// `ptr..ptr+len` must lie inside one writable private mapping.
unsafe fn populate_range(ptr: *mut u8, len: usize) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize + len) / page * page;
    if end <= start {
        return true;
    }
    // SAFETY: start..end is page-aligned and inside the caller's range.
    unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_POPULATE_WRITE) == 0 }
}

/// Faults in the pages of a slice of a [`Region`] ahead of writing it, from
/// the calling thread (see [`Region::new`]): cheaper than the writes' own
/// page faults.
pub fn populate(part: &mut [u8]) {
    // SAFETY: the slice lies inside a Region: a writable private mapping.
    unsafe { populate_range(part.as_mut_ptr(), part.len()) };
}

impl Region {
    /// Maps `len` bytes backed by `pages`, touching every page (not timed).
    /// A request larger than half the memory available now is a skip.
    pub fn new(len: usize, pages: Pages) -> Result<Region, PrepareError> {
        let mut r = Region::untouched(len, pages)?;
        r.touch();
        Ok(r)
    }

    /// Like [`Region::new`] (touched, zeroed), but taken from this process's
    /// pool of populated mappings when one fits, and given back to it on
    /// drop (see [`crate::os::mempool`]: only round workers on one-node
    /// machines keep one). For regions no NUMA policy is bound to.
    pub fn from_pool(len: usize, pages: Pages) -> Result<Region, PrepareError> {
        match Region::take_from_pool(len, pages) {
            Some(r) => {
                // SAFETY: ptr..ptr+len is mapped writable (populated by its first user).
                unsafe { std::ptr::write_bytes(r.ptr, 0, r.len) };
                Ok(r)
            }
            None => {
                mempool::make_room(len);
                Region::new(len, pages).map(Region::for_pool)
            }
        }
    }

    /// Like [`Region::untouched`], but taken from (and given back to) the
    /// pool as [`Region::from_pool`]: its pages may then be faulted in already
    /// and hold what an earlier user wrote, so it is for callers that
    /// populate and write every byte themselves before reading any.
    pub fn from_pool_untouched(len: usize, pages: Pages) -> Result<Region, PrepareError> {
        match Region::take_from_pool(len, pages) {
            Some(r) => Ok(r),
            None => {
                mempool::make_room(len);
                Region::untouched(len, pages).map(Region::for_pool)
            }
        }
    }

    fn take_from_pool(len: usize, pages: Pages) -> Option<Region> {
        let m = mempool::take(pages as u8, len)?;
        let base = NonNull::new(m.base as *mut c_void)?;
        Some(Region {
            base,
            map_len: m.map_len,
            // SAFETY: offset + populated <= map_len: the pool hands back what was given.
            ptr: unsafe { base.as_ptr().cast::<u8>().add(m.offset) },
            len,
            pooled: Some(m.populated),
            pages,
            huge_share: std::cell::Cell::new(m.huge_share),
        })
    }

    fn for_pool(mut self) -> Region {
        if mempool::enabled() {
            self.pooled = Some(self.len);
        }
        self
    }

    /// Faults every page in from the calling thread (first touch places
    /// them, under any memory policy bound to the range), so that no page
    /// fault is ever timed.
    pub fn touch(&mut self) {
        // MADV_POPULATE_WRITE (Linux 5.14) does it without a trap per page,
        // ~40% faster than touching them, which matters for the quick
        // profile's hundreds of MiB; older kernels get the touch.
        // SAFETY: ptr..ptr+len lies inside our own writable mapping.
        let populated = unsafe { populate_range(self.ptr, self.len) };
        if !populated {
            // SAFETY: ptr..ptr+len is mapped writable.
            unsafe { std::ptr::write_bytes(self.ptr, 0, self.len) };
        }
    }

    /// Maps like [`Region::new`] but leaves the pages untouched, so that the
    /// threads that will use them can place them (first touch) themselves.
    pub fn untouched(len: usize, pages: Pages) -> Result<Region, PrepareError> {
        crate::suites::bench::check_memory(len as u64)?;
        let huge = huge_page_size();
        // Room to align the start to a huge page, and for THP the whole
        // huge pages around a small array.
        let map_len = len
            .div_ceil(huge)
            .checked_add(1)
            .and_then(|n| n.checked_mul(huge))
            .ok_or_else(|| PrepareError::Skip(format!("{len} bytes cannot be mapped")))?;
        let nz = NonZeroUsize::new(map_len)
            .ok_or_else(|| PrepareError::Fail(anyhow::anyhow!("empty region")))?;
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let base = unsafe {
            mmap_anonymous(
                None,
                nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .map_err(|e| {
            PrepareError::Skip(format!(
                "cannot map {} MiB of memory ({e}); free some memory or use a shorter profile",
                len >> 20
            ))
        })?;
        let offset = (huge - (base.as_ptr() as usize % huge)) % huge;
        // SAFETY: offset < huge and map_len >= len + huge, so ptr..ptr+len is inside the mapping.
        let ptr = unsafe { base.as_ptr().cast::<u8>().add(offset) };
        let region = Region {
            base,
            map_len,
            ptr,
            len,
            pooled: None,
            pages,
            huge_share: std::cell::Cell::new(None),
        };
        let advice = match pages {
            Pages::Default => None,
            Pages::Small => Some(MmapAdvise::MADV_NOHUGEPAGE),
            Pages::Huge => Some(MmapAdvise::MADV_HUGEPAGE),
        };
        if let Some(advice) = advice {
            let advised = len.div_ceil(huge) * huge;
            // SAFETY: the advised range lies inside our own mapping.
            let r = unsafe {
                madvise(
                    NonNull::new_unchecked(ptr.cast::<c_void>()),
                    advised,
                    advice,
                )
            };
            if let Err(e) = r {
                return Err(PrepareError::Skip(format!(
                    "madvise({}) failed ({e}): this kernel lacks transparent huge pages",
                    pages.name()
                )));
            }
        }
        Ok(region)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty region (never: `new` maps at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start address (aligned to a huge page).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The region as a slice of `T` (its length rounded down to whole `T`s).
    pub fn as_mut_slice<T: Pod>(&mut self) -> &mut [T] {
        let n = self.len / std::mem::size_of::<T>();
        // SAFETY: the region is mapped, writable, aligned to a huge page (so to
        // any T), initialised (zeroed, and T is plain old data), and borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), n) }
    }

    /// The share of the region backed by huge pages: none by construction
    /// (nothing read) for 4 KiB pages asked for, or for no advice where the
    /// THP mode gives huge pages only to those who ask; else read once from
    /// `/proc/self/smaps` and kept with the region, also through the pool
    /// (reading smaps walks the page tables of the mappings listed before
    /// the region's, a pool's included: ~20 ms each at a few hundred MiB).
    pub fn huge_fraction(&self) -> Option<f64> {
        let mode = thp_mode();
        let none_by_construction = match self.pages {
            Pages::Small => true,
            Pages::Default => mode.as_deref().is_none_or(|m| m != "always"),
            Pages::Huge => mode.as_deref().is_none_or(|m| m == "never"),
        };
        if none_by_construction {
            return Some(0.0);
        }
        // A region from the pool keeps the share measured when its pages
        // were faulted in: the walk would cross every pooled mapping.
        if let Some(share) = self.huge_share.get() {
            return Some(share);
        }
        // Read line by line and stop at the region's entry: the kernel walks
        // only the mappings listed before it.
        let smaps = std::io::BufReader::new(std::fs::File::open("/proc/self/smaps").ok()?);
        let lines = std::io::BufRead::lines(smaps).map_while(Result::ok);
        let kb = anon_huge_kb(lines, self.ptr as usize)?;
        let share = ((kb * 1024) as f64 / self.len.max(1) as f64).min(1.0);
        self.huge_share.set(Some(share));
        Some(share)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some(populated) = self.pooled {
            let m = mempool::Mapping {
                base: self.base.as_ptr() as usize,
                map_len: self.map_len,
                offset: self.ptr as usize - self.base.as_ptr() as usize,
                populated,
                kind: self.pages as u8,
                huge_share: self.huge_share.get(),
            };
            if mempool::give(m).is_none() {
                return;
            }
        }
        // SAFETY: base/map_len are exactly what mmap returned; nothing borrows it now.
        let _ = unsafe { munmap(self.base, self.map_len) };
    }
}

/// A type for which every bit pattern (zero included) is a valid value,
/// so a zeroed region may be viewed as a slice of it.
///
/// # Safety
/// Implement only for types without padding, references or invariants.
pub unsafe trait Pod: Copy {}
// SAFETY: integers and floats accept every bit pattern.
unsafe impl Pod for u8 {}
// SAFETY: as above.
unsafe impl Pod for u64 {}
// SAFETY: as above.
unsafe impl Pod for usize {}
// SAFETY: as above.
unsafe impl Pod for f64 {}

/// The kernel's huge page size (PMD size), 2 MiB when it does not say.
pub fn huge_page_size() -> usize {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n.is_power_of_two() && n >= 4096)
        .unwrap_or(DEFAULT_HUGE_PAGE)
}

/// The system's transparent huge page mode (`always`, `madvise`, `never`), if any.
pub fn thp_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

/// `AnonHugePages` (kB) of the smaps entry (mapping) that contains `addr`.
/// (madvise splits a mapping, so the advised part is an entry of its own.)
fn anon_huge_kb<S: AsRef<str>>(smaps: impl Iterator<Item = S>, addr: usize) -> Option<u64> {
    let mut inside = false;
    for line in smaps {
        let line = line.as_ref();
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-')
            && !first.contains(':')
            && lo.chars().all(|c| c.is_ascii_hexdigit())
        {
            let range = usize::from_str_radix(lo, 16)
                .ok()
                .zip(usize::from_str_radix(hi, 16).ok());
            inside = range.is_some_and(|(lo, hi)| lo <= addr && addr < hi);
            continue;
        }
        if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
            return rest.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// Pages asked where they live, per region, spread evenly over it.
pub const SAMPLE_PAGES: usize = 64;

/// Where a sample of a region's pages lives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Pages asked.
    pub checked: usize,
    /// Pages found on the node asked for.
    pub on_node: usize,
    /// The others: node (or, negative, the errno `move_pages` gave for the
    /// page, `-2` for a page not present) and how many.
    pub elsewhere: BTreeMap<i32, usize>,
}

impl Placement {
    /// Counts the `move_pages` statuses of pages meant for `node`.
    pub fn of(statuses: &[i32], node: u32) -> Placement {
        let mut p = Placement {
            checked: statuses.len(),
            ..Placement::default()
        };
        for &s in statuses {
            if u32::try_from(s).is_ok_and(|s| s == node) {
                p.on_node += 1;
            } else {
                *p.elsewhere.entry(s).or_default() += 1;
            }
        }
        p
    }

    /// True when every page asked is on the node.
    pub fn verified(&self) -> bool {
        self.checked > 0 && self.on_node == self.checked
    }

    /// Why the placement does not hold, in words: "12 of 64 sampled pages
    /// on node 1; 52 on node 0".
    pub fn reason(&self, node: u32) -> String {
        let others: Vec<String> = self
            .elsewhere
            .iter()
            .map(|(&s, &n)| match s {
                s if s >= 0 => format!("{n} on node {s}"),
                -2 => format!("{n} not present"),
                s => format!("{n} unreadable (errno {})", -s),
            })
            .collect();
        format!(
            "{} of {} sampled pages on node {node}; {}",
            self.on_node,
            self.checked,
            if others.is_empty() {
                "no page could be asked".to_string()
            } else {
                others.join(", ")
            }
        )
    }

    /// The placement as recorded with a result.
    pub fn details(&self) -> serde_json::Value {
        json!({"pages_checked": self.checked, "pages_on_node": self.on_node})
    }
}

/// Binds the (untouched) pages of `region` to `node` (`mbind`,
/// `MPOL_BIND`): pages touched later are allocated there or not at all.
pub fn bind(region: &Region, node: u32) -> Result<(), PrepareError> {
    crate::os::numa::bind(region.as_ptr() as usize, region.len(), node).map_err(|e| {
        PrepareError::Skip(format!(
            "cannot bind memory to node {node} (mbind: {e}); the kernel lacks NUMA support or the cpuset's mems exclude the node"
        ))
    })
}

/// The addresses of [`SAMPLE_PAGES`] pages spread over `len` bytes from `ptr`.
pub fn sample_pages(ptr: usize, len: usize, page: usize) -> Vec<usize> {
    let pages = len.div_ceil(page.max(1));
    let n = pages.min(SAMPLE_PAGES);
    (0..n).map(|i| ptr + i * pages / n * page).collect()
}

/// Where the pages of `regions` live, from a sample of each, checked
/// against `node`: a skip naming where they went when any is elsewhere.
pub fn verify(regions: &[Region], node: u32) -> Result<Placement, PrepareError> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let mut statuses = Vec::new();
    for r in regions {
        let pages = sample_pages(r.as_ptr() as usize, r.len(), page);
        statuses.extend(crate::os::numa::query_nodes(&pages).map_err(|e| {
            PrepareError::Skip(format!(
                "cannot check where memory bound to node {node} lives (move_pages: {e})"
            ))
        })?);
    }
    let p = Placement::of(&statuses, node);
    if !p.verified() {
        return Err(PrepareError::Skip(format!(
            "memory bound to node {node} landed elsewhere: {}",
            p.reason(node)
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_entry_is_the_one_containing_the_address() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:         0 kB
7f0000400000-7f0000c00000 rw-p 00000000 00:00 0
Size:               8192 kB
AnonHugePages:      6144 kB
";
        assert_eq!(anon_huge_kb(smaps.lines(), 0x7f0000400000), Some(6144));
        assert_eq!(anon_huge_kb(smaps.lines(), 0x7f0000500000), Some(6144));
        assert_eq!(anon_huge_kb(smaps.lines(), 0x7f0000000000), Some(0));
        assert_eq!(anon_huge_kb(smaps.lines(), 0x7f0000c00000), None);
        assert_eq!(anon_huge_kb(smaps.lines(), 0x1234), None);
    }

    #[test]
    fn region_is_aligned_zeroed_and_writable() {
        let mut r = Region::new(100_000, Pages::Small).unwrap();
        assert_eq!(r.as_ptr() as usize % huge_page_size(), 0);
        assert_eq!(r.len(), 100_000);
        let s = r.as_mut_slice::<u64>();
        assert_eq!(s.len(), 12_500);
        assert!(s.iter().all(|&x| x == 0));
        s[12_499] = 7;
        assert_eq!(r.as_mut_slice::<u64>()[12_499], 7);
        assert!(r.huge_fraction().is_some());
    }

    #[test]
    fn page_advice_is_seen_in_smaps() {
        let huge = huge_page_size();
        let small = Region::new(2 * huge, Pages::Small).unwrap();
        assert_eq!(small.huge_fraction(), Some(0.0));
        if thp_mode().is_some_and(|m| m != "never") {
            let h = Region::new(2 * huge, Pages::Huge).unwrap();
            let f = h.huge_fraction().expect("the advised mapping is listed");
            assert!((0.0..=1.0).contains(&f), "{f}");
        }
    }

    #[test]
    fn absurd_sizes_are_skipped_not_failed() {
        match Region::new(usize::MAX / 2, Pages::Default) {
            Err(PrepareError::Skip(reason)) => assert!(reason.contains("MiB"), "{reason}"),
            Err(e) => panic!("expected a skip, got {e}"),
            Ok(_) => panic!("expected a skip"),
        }
    }

    #[test]
    fn a_pooled_region_comes_back_zeroed_and_keeps_its_huge_share() {
        mempool::enable(None);
        let len = (4 << 20) + 4096 * 3;
        let mut a = Region::from_pool(len, Pages::Small).unwrap();
        a.as_mut_slice::<u8>().fill(7);
        assert_eq!(a.huge_fraction(), Some(0.0));
        drop(a);
        // Whichever mapping comes back (another test may use the pool
        // too), it holds zeros only.
        let mut b = Region::from_pool(len, Pages::Small).unwrap();
        assert_eq!(b.len(), len);
        assert!(b.as_mut_slice::<u64>().iter().all(|&w| w == 0));
        let mut c = Region::from_pool_untouched(len / 2 + 4096, Pages::Small).unwrap();
        c.touch();
        c.as_mut_slice::<u8>().fill(1);
    }

    #[test]
    fn thp_mode_is_one_of_the_known_words_when_present() {
        if let Some(m) = thp_mode() {
            assert!(["always", "madvise", "never"].contains(&m.as_str()), "{m}");
        }
    }
}
