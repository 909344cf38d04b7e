//! Spawn cost against the descriptors the parent holds open. A child
//! starts with a copy of its parent's descriptor table (fork and glibc's
//! posix_spawn alike: neither shares the table), and exec then closes every
//! close-on-exec descriptor; runtimes that do not trust close-on-exec also
//! loop up to RLIMIT_NOFILE closing descriptors. So a server holding
//! thousands of sockets may pay for them on every child it starts.
//!
//! The descriptors are duplicates of one `/dev/null` descriptor made with
//! `F_DUPFD_CLOEXEC`, close-on-exec as every descriptor Rust and most
//! modern code opens. The soft RLIMIT_NOFILE is raised (up to the hard
//! limit) while they are held, and restored after; a point above the hard
//! limit is skipped with the reason.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::spawn::Spawner;
use crate::harness::{PrepareError, Timed};

/// Descriptors open in the parent at each point of the sweep. The 10 000
/// point fits under the hard limits of most machines and containers, so
/// every run has a point where the cost per descriptor dwarfs the noise of
/// a spawn: with 10 and 1000 alone, a rise of ~100 µs sat within the two
/// points' intervals at the quick profile and "grows" came and went.
pub const FD_POINTS: [u64; 4] = [10, 1_000, 10_000, 100_000];

/// Descriptors left free under the limit beside the held ones (the run's
/// own files, pipes of the children).
const SPARE: u64 = 64;

/// Descriptors held open, and the soft limit to restore when they go.
pub struct FdSet {
    held: Vec<OwnedFd>,
    open_total: u64,
    restore_soft: Option<libc::rlim_t>,
    soft_used: u64,
}

/// The set of the current point, shared by the benchmarks of its
/// interleaved group (see `spawn::Region::shared` for the same pattern).
static SHARED: Mutex<Option<(u64, Weak<FdSet>)>> = Mutex::new(None);

/// Descriptors this process has open now (entries of /proc/self/fd, less
/// the one the listing itself uses).
pub fn open_now() -> std::io::Result<u64> {
    let n = std::fs::read_dir("/proc/self/fd")?.count() as u64;
    Ok(n.saturating_sub(1))
}

/// The soft and hard RLIMIT_NOFILE.
pub(super) fn nofile() -> std::io::Result<(libc::rlim_t, libc::rlim_t)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((r.rlim_cur, r.rlim_max))
}

/// Sets the soft RLIMIT_NOFILE, keeping the hard one.
fn set_soft(soft: libc::rlim_t, hard: libc::rlim_t) -> std::io::Result<()> {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Why `want` descriptors cannot be held under a hard limit of `hard`, if so.
pub fn over_hard_limit(want: u64, hard: u64) -> Option<String> {
    let need = want + SPARE;
    (need > hard).then(|| {
        format!(
            "holding {want} descriptors needs RLIMIT_NOFILE >= {need}, and the hard limit here is {hard} (raise it with `ulimit -Hn` as root, or in limits.conf / the service's LimitNOFILE)"
        )
    })
}

/// Whether holding `total` descriptors will be refused here (the hard
/// limit is too low), as far as the limit read now says: the run-time
/// estimate counts no time for such a point.
pub fn refused_here(total: u64) -> bool {
    nofile().is_ok_and(|(_, hard)| over_hard_limit(total, hard).is_some())
}

impl FdSet {
    /// The set for `total` descriptors open in all, shared with the other
    /// benchmarks of the same point.
    pub fn shared(total: u64) -> Result<Arc<FdSet>, PrepareError> {
        let mut cache = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((n, w)) = cache.as_ref()
            && *n == total
            && let Some(s) = w.upgrade()
        {
            return Ok(s);
        }
        *cache = None;
        let s = Arc::new(FdSet::open(total)?);
        *cache = Some((total, Arc::downgrade(&s)));
        Ok(s)
    }

    /// Raises the soft limit if needed and opens descriptors until `total`
    /// are open in this process (the fork helper holds its own this way).
    pub fn open(total: u64) -> Result<FdSet, PrepareError> {
        let (soft, hard) = nofile()?;
        if let Some(why) = over_hard_limit(total, hard) {
            return Err(PrepareError::Skip(why));
        }
        let need = total + SPARE;
        let restore_soft = if soft < need {
            set_soft(need, hard).map_err(|e| {
                PrepareError::Skip(format!(
                    "cannot raise the soft RLIMIT_NOFILE from {soft} to {need}: {e}"
                ))
            })?;
            Some(soft)
        } else {
            None
        };
        let mut set = FdSet {
            held: Vec::new(),
            open_total: 0,
            restore_soft,
            soft_used: need.max(soft),
        };
        let base = std::fs::File::open("/dev/null")?;
        // Another thread may close descriptors of its own while the set
        // fills (counted as open when the shortfall was read), so count
        // again and top up a few times before settling.
        for _ in 0..4 {
            let add = total.saturating_sub(open_now()?.saturating_sub(1));
            if add == 0 {
                break;
            }
            set.held.reserve(add as usize);
            for _ in 0..add {
                // SAFETY: duplicating a descriptor we own; the result is checked.
                let fd = unsafe { libc::fcntl(base.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
                if fd < 0 {
                    return Err(anyhow::Error::new(std::io::Error::last_os_error())
                        .context(format!(
                            "duplicating a descriptor ({} held, {total} wanted open)",
                            set.held.len()
                        ))
                        .into());
                }
                // SAFETY: a fresh descriptor we own.
                set.held.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        drop(base);
        set.open_total = open_now()?;
        Ok(set)
    }

    /// Descriptors open in the process once the set was filled.
    pub fn open_total(&self) -> u64 {
        self.open_total
    }

    /// Facts for a result's details.
    fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "fds_open": self.open_total,
            "fds_held": self.held.len(),
            "fds_cloexec": true,
            "nofile_soft": self.soft_used,
            "nofile_raised": self.restore_soft.is_some(),
        })
    }
}

impl Drop for FdSet {
    fn drop(&mut self) {
        self.held.clear();
        if let Some(old) = self.restore_soft
            && let Ok((_, hard)) = nofile()
        {
            let _ = set_soft(old, hard);
        }
    }
}

/// A spawn measured while the parent holds a [`FdSet`].
pub struct WithFds {
    spawner: Spawner,
    fds: Arc<FdSet>,
}

impl WithFds {
    /// `spawner`, timed while `fds` are held.
    pub fn new(spawner: Spawner, fds: Arc<FdSet>) -> WithFds {
        WithFds { spawner, fds }
    }
}

impl Timed for WithFds {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        self.spawner.run(ops)
    }
    fn max_ops(&self) -> Option<u64> {
        self.spawner.max_ops()
    }
    fn take_op_times(&mut self) -> Vec<f64> {
        self.spawner.take_op_times()
    }
    fn warnings(&self) -> Vec<String> {
        self.spawner.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self
            .spawner
            .details()
            .unwrap_or_else(|| serde_json::json!({}));
        if let (Some(d), serde_json::Value::Object(f)) = (d.as_object_mut(), self.fds.details()) {
            d.extend(f);
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_above_the_hard_limit_says_why() {
        let why = over_hard_limit(100_000, 20_000).unwrap();
        assert!(why.contains("hard limit here is 20000"), "{why}");
        assert!(over_hard_limit(1_000, 20_000).is_none());
    }

    #[test]
    fn the_set_holds_its_descriptors_and_restores_the_limit() {
        let _g = crate::os::child::test_lock();
        let (soft, hard) = nofile().unwrap();
        // Start from a soft limit just above what is open, so that the set
        // has to raise it (when the hard limit leaves room to).
        let open_before = open_now().unwrap();
        let low = (open_before + 2 * SPARE).min(soft);
        set_soft(low, hard).unwrap();
        let want = (low + 200).min(hard.saturating_sub(SPARE));
        {
            let s = FdSet::shared(want).unwrap();
            let again = FdSet::shared(want).unwrap();
            assert!(Arc::ptr_eq(&s, &again));
            // Other test threads open and close files meanwhile, so the
            // process-wide count can sit a few below the target when read.
            assert!(s.open_total + 16 >= want, "{} << {want}", s.open_total);
            assert!(
                s.held.len() as u64 + 16 >= want.saturating_sub(open_before),
                "{}",
                s.held.len()
            );
            let d = s.details();
            assert_eq!(d["fds_cloexec"], true);
            if want + SPARE > low {
                assert_eq!(d["nofile_raised"], true);
                assert!(nofile().unwrap().0 >= want + SPARE);
            }
        }
        assert_eq!(nofile().unwrap().0, low, "soft limit restored");
        set_soft(soft, hard).unwrap();
    }
}
