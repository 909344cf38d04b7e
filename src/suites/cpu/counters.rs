//! Hardware counters (cycles, instructions) through perf_event_open, where
//! the CPU, the kernel and the hypervisor expose them. Many virtual machines
//! do not; then [`availability`] says why, once, and the cycle figures are
//! estimated from the effective clock instead.

use std::sync::OnceLock;

use perf_event::events::Hardware;
use perf_event::{Builder, Counter, Group};

/// Cycles and instructions counted over the timed batches of one benchmark.
pub struct Counters {
    group: Group,
    cycles: Counter,
    instructions: Counter,
    total_cycles: u64,
    total_instructions: u64,
    total_ops: u64,
}

impl Counters {
    /// Opens a cycles + instructions group for this thread, or says why not.
    pub fn open() -> Result<Counters, String> {
        let mut group = Group::new().map_err(|e| explain(&e))?;
        let cycles = group
            .add(&Builder::new(Hardware::CPU_CYCLES))
            .map_err(|e| explain(&e))?;
        let instructions = group
            .add(&Builder::new(Hardware::INSTRUCTIONS))
            .map_err(|e| explain(&e))?;
        Ok(Counters {
            group,
            cycles,
            instructions,
            total_cycles: 0,
            total_instructions: 0,
            total_ops: 0,
        })
    }

    /// Starts counting (call right before the timed work).
    pub fn start(&mut self) {
        let _ = self.group.reset();
        let _ = self.group.enable();
    }

    /// Stops counting and adds the counts of `ops` operations.
    pub fn stop(&mut self, ops: u64) {
        let _ = self.group.disable();
        if let Ok(data) = self.group.read() {
            let running = data.time_running().unwrap_or_default();
            let cycles = data.get(&self.cycles).map(|e| e.value());
            let instructions = data.get(&self.instructions).map(|e| e.value());
            // A group the kernel could not schedule reads zero: ignore it.
            if let (false, Some(c), Some(i)) = (running.is_zero(), cycles, instructions) {
                self.total_cycles += c;
                self.total_instructions += i;
                self.total_ops += ops;
            }
        }
    }

    /// Cycles, instructions and IPC per operation so far, as JSON.
    pub fn per_op(&self) -> Option<serde_json::Value> {
        if self.total_ops == 0 || self.total_cycles == 0 {
            return None;
        }
        let ops = self.total_ops as f64;
        Some(serde_json::json!({
            "cycles_per_op": self.total_cycles as f64 / ops,
            "instructions_per_op": self.total_instructions as f64 / ops,
            "ipc": self.total_instructions as f64 / self.total_cycles as f64,
        }))
    }
}

/// Whether counters can be opened here: `Ok(())` or the reason, found once.
pub fn availability() -> Result<(), String> {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    AVAILABLE.get_or_init(|| Counters::open().map(drop)).clone()
}

/// A perf_event_open error in words a user can act on.
fn explain(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            format!("no hardware cycle counter is exposed here ({e}; usual in virtual machines)")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open was refused ({e}); lower /proc/sys/kernel/perf_event_paranoid or run as root"
        ),
        Some(libc::ENOSYS) => format!("this kernel has no perf_event_open ({e})"),
        _ => format!("perf_event_open failed ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn availability_is_stable_and_explained() {
        let a = availability();
        assert_eq!(a, availability());
        if let Err(why) = a {
            assert!(why.len() > 10, "{why}");
        }
    }

    #[test]
    fn counting_nothing_gives_no_per_op_figures() {
        if let Ok(mut c) = Counters::open() {
            assert!(c.per_op().is_none());
            c.start();
            std::hint::black_box((0..10_000u64).sum::<u64>());
            c.stop(10_000);
            if let Some(v) = c.per_op() {
                assert!(v["cycles_per_op"].as_f64().unwrap() > 0.0);
            }
        }
    }

    #[test]
    fn errors_name_the_fix() {
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        assert!(explain(&e).contains("perf_event_paranoid"));
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(explain(&e).contains("virtual machines"));
    }
}
