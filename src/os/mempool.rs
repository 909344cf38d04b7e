//! A process's pool of populated anonymous mappings, kept between the
//! memory benchmarks of one round worker so that each does not map, fault
//! in and unmap hundreds of MiB again.
//!
//! Why: on a KVM guest here faulting pages in runs at ~1.5 GB/s (even with
//! `MADV_POPULATE_WRITE`) and unmapping them at ~6 GB/s, against ~12 GB/s
//! for writing memory already mapped: 11 of the 22 s the memory area took
//! in a quick whole-machine run went to fresh arrays. A worker measures
//! round `k` of every benchmark, so reusing its pages across benchmarks
//! keeps the rounds independent (each is still in a process of its own).
//!
//! What keeps the pool from changing other measurements:
//! - it is off unless a round worker turns it on ([`enable`]), and off on a
//!   machine with more than one NUMA node (where first touch places pages);
//! - a mapping in the pool is `MADV_DONTFORK`, so a `fork()` measured by a
//!   later benchmark copies no page table of it;
//! - it holds at most [`LIMIT`] (and an eighth of the machine's memory),
//!   the oldest given back first to go, and [`held_bytes`] lets the memory
//!   checks count it as available;
//! - a worker empties it when it waits for its next request (its pass is
//!   over), so idle workers hold nothing.

use std::sync::Mutex;

/// The most a pool holds: more than a quick round's largest benchmark
/// (two 224 MiB arrays above glibc's non-temporal threshold) and its
/// bandwidth arrays.
pub const LIMIT: usize = 1 << 30;

/// A mapping smaller than this is not pooled (mapping it is cheap).
pub const MIN_POOLED: usize = 2 << 20;

/// A mapping serves a request only if it is at most this many times the
/// size asked for (a larger one is kept for a larger request).
const MAX_WASTE: usize = 2;

/// One populated private anonymous mapping: `populated` bytes from
/// `base + offset` are faulted in and readable and writable; `kind` is the
/// caller's tag for the page size advice it was given.
#[derive(Debug)]
pub struct Mapping {
    /// Start of the mapping (as mmap returned it).
    pub base: usize,
    /// Length of the mapping.
    pub map_len: usize,
    /// Where the populated bytes begin, from `base`.
    pub offset: usize,
    /// Bytes populated from `base + offset`.
    pub populated: usize,
    /// The caller's tag (page size advice).
    pub kind: u8,
    /// The share of it backed by huge pages, when the caller measured it
    /// (kept so that it need not be measured again).
    pub huge_share: Option<f64>,
}

struct Pool {
    limit: usize,
    held: Vec<Mapping>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    limit: 0,
    held: Vec::new(),
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Turns the pool on for this process with room for `min(LIMIT, memory/8)`
/// (`memory` = total bytes), unless the machine has several NUMA nodes.
pub fn enable(memory: Option<u64>) {
    let nodes = std::fs::read_to_string("/sys/devices/system/node/online")
        .map(|s| online_count(s.trim()))
        .unwrap_or(1);
    if nodes > 1 {
        return;
    }
    let eighth = memory.map_or(LIMIT, |m| usize::try_from(m / 8).unwrap_or(LIMIT));
    pool().limit = LIMIT.min(eighth);
}

/// How many ids a kernel list such as `0-1,3` names.
fn online_count(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum()
}

/// True when mappings given back may be kept.
pub fn enabled() -> bool {
    pool().limit > 0
}

/// Bytes the pool holds now.
pub fn held_bytes() -> u64 {
    pool().held.iter().map(|m| m.map_len as u64).sum()
}

/// Takes the smallest pooled mapping of `kind` with at least `len` bytes
/// populated (and at most twice that), made forkable again.
pub fn take(kind: u8, len: usize) -> Option<Mapping> {
    let mut p = pool();
    let best = p
        .held
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == kind && m.populated >= len && m.populated <= len * MAX_WASTE)
        .min_by_key(|(_, m)| m.populated)
        .map(|(i, _)| i)?;
    let m = p.held.remove(best);
    drop(p);
    advise(&m, libc::MADV_DOFORK);
    Some(m)
}

/// Keeps `m` for a later [`take`]; gives it back (the caller unmaps it)
/// when the pool is off, it is too small to be worth keeping, or it alone
/// exceeds the limit. The oldest mappings held go first to make room; they
/// are unmapped here.
pub fn give(m: Mapping) -> Option<Mapping> {
    let mut p = pool();
    if p.limit == 0 || m.populated < MIN_POOLED || m.map_len > p.limit {
        return Some(m);
    }
    let mut evicted = Vec::new();
    let mut held: usize = p.held.iter().map(|m| m.map_len).sum();
    while held + m.map_len > p.limit && !p.held.is_empty() {
        let old = p.held.remove(0);
        held -= old.map_len;
        evicted.push(old);
    }
    advise(&m, libc::MADV_DONTFORK);
    p.held.push(m);
    drop(p);
    evicted.into_iter().for_each(unmap);
    None
}

/// Unmaps what the pool holds when a new mapping of `len` bytes would
/// leave less than as much again of the machine's memory available.
pub fn make_room(len: usize) {
    if held_bytes() == 0 {
        return;
    }
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024);
    if avail.is_none_or(|a| a < 2 * len as u64) {
        release();
    }
}

/// Unmaps everything the pool holds.
pub fn release() {
    let held = std::mem::take(&mut pool().held);
    held.into_iter().for_each(unmap);
}

fn advise(m: &Mapping, advice: libc::c_int) {
    // SAFETY: base..base+map_len is a mapping this pool owns; fork advice
    // changes no contents.
    unsafe { libc::madvise(m.base as *mut libc::c_void, m.map_len, advice) };
}

fn unmap(m: Mapping) {
    // SAFETY: base/map_len are exactly what mmap returned, and nothing
    // refers to a mapping the pool holds.
    unsafe { libc::munmap(m.base as *mut libc::c_void, m.map_len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_lists_are_counted() {
        assert_eq!(online_count("0"), 1);
        assert_eq!(online_count("0-1"), 2);
        assert_eq!(online_count("0-3,6"), 5);
        assert_eq!(online_count(""), 0);
    }
}
