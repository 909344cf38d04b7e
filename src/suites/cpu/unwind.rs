//! What an exception costs: a panic caught 1, 10 and 100 frames up against
//! an error value (`Result`) returned through the same frames.
//!
//! Both descend through the same `#[inline(never)]` recursion, each frame
//! adding to what the frame below returns (through [`black_box`], so the
//! calls stay calls and no frame is a tail call). At the bottom one raises
//! a panic with `resume_unwind`, which skips the panic hook (no message,
//! no backtrace check: `cpu.panic.caught` does the same), caught by
//! `catch_unwind` above the top frame; the other returns `Err` and every
//! frame passes it on with `?`. So the two rows differ only in how the
//! failure travels up: the unwinder's two passes over the frames' unwind
//! tables against a compare and a return per frame.

use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::dispatch::{ghz_details, one_thread};
use crate::harness::{Bench, Ctx, PrepareError, Unit};
use crate::suites::bench::FnBench;

/// Frames between the failure and its handler, in report order.
pub const FRAMES: [u32; 3] = [1, 10, 100];

/// Budget of a row relative to the profile's default.
const BUDGET: f64 = 0.5;

/// The id of a panic caught `frames` up: `cpu.panic.unwind/10`.
pub fn panic_id(frames: u32) -> String {
    format!("cpu.panic.unwind/{frames}")
}

/// The id of an error returned through `frames`: `cpu.error.return/10`.
pub fn error_id(frames: u32) -> String {
    format!("cpu.error.return/{frames}")
}

/// The error value returned: a word, as a typical error enum is.
#[derive(Debug)]
pub struct Failure(pub u64);

/// `below` more frames, then a panic (no hook, no message).
#[inline(never)]
pub fn dive_panic(below: u32) -> u64 {
    if black_box(below) == 0 {
        resume_unwind(Box::new(0u8));
    }
    let r = dive_panic(below - 1);
    black_box(r).wrapping_add(1)
}

/// `below` more frames, then an error returned up through every one.
#[inline(never)]
pub fn dive_error(below: u32) -> Result<u64, Failure> {
    if black_box(below) == 0 {
        return Err(Failure(black_box(7)));
    }
    let r = dive_error(below - 1)?;
    Ok(black_box(r).wrapping_add(1))
}

/// A panic raised `frames` frames down and caught: true when caught.
pub fn panic_through(frames: u32) -> bool {
    catch_unwind(AssertUnwindSafe(|| dive_panic(frames - 1))).is_err()
}

/// An error returned through `frames` frames: true when it arrived.
pub fn error_through(frames: u32) -> bool {
    dive_error(frames - 1).is_err()
}

/// The rows: a caught panic and a returned error at each depth.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut out = Vec::new();
    for frames in FRAMES {
        let s = if frames == 1 { "" } else { "s" };
        out.push(row(
            panic_id(frames),
            format!(
                "a panic (resume_unwind: no hook, no message) caught by catch_unwind {frames} non-inlined frame{s} up"
            ),
            frames,
            true,
            panic_through,
        ));
        out.push(row(
            error_id(frames),
            format!("an error (Result::Err) returned with ? through the same {frames} frame{s}"),
            frames,
            false,
            error_through,
        ));
    }
    out
}

/// One row: `through(frames)` timed on one thread; a row that `unwinds`
/// is skipped in a build where panics abort. `through` is a function item,
/// so the timed closure calls it directly.
fn row(
    id: String,
    summary: String,
    frames: u32,
    unwinds: bool,
    through: impl Fn(u32) -> bool + Copy + Send + Sync + 'static,
) -> Box<dyn Bench> {
    FnBench::new(id, summary, Unit::Latency, move |_ctx: &Ctx| {
        if unwinds && catch_unwind(|| resume_unwind(Box::new(0u8))).is_ok() {
            return Err(PrepareError::Skip(
                "panics abort in this build (panic = \"abort\"): nothing unwinds".into(),
            ));
        }
        Ok(one_thread(
            move || {
                black_box(through(black_box(frames)));
            },
            ghz_details(),
        ))
    })
    .param("frames", frames)
    .interleave("cpu.unwind")
    .budget_scale(BUDGET)
    .on_request()
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_failures_arrive_from_every_depth() {
        for frames in FRAMES {
            assert!(panic_through(frames), "{frames}");
            assert!(error_through(frames), "{frames}");
        }
        assert_eq!(dive_error(0).unwrap_err().0, 7);
    }

    #[test]
    fn ids_are_unique_and_name_the_frames() {
        let b = benches();
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), 6);
        assert!(ids.contains("cpu.panic.unwind/10") && ids.contains("cpu.error.return/100"));
        assert!(!ids.contains(super::super::dispatch::PANIC_CAUGHT));
    }
}
