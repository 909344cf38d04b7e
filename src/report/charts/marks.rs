//! What tells the curves of a chart apart beside colour: marker shapes
//! and line patterns.

use plotters::prelude::*;

use super::{Canvas, draw_err};

/// The marker shapes, by [`super::Series::marker`] index.
pub const MARKERS: [&str; 4] = ["circle", "triangle", "square", "cross"];

/// The line patterns (dash, gap in pixels; 0 = solid), by [`super::Series::dash`] index.
pub(super) const DASHES: [(u32, u32); 4] = [(0, 0), (8, 5), (2, 4), (14, 4)];

/// Draws one marker of shape `shape` at `xy` (backend pixels).
pub(super) fn marker_at(
    area: &Canvas<'_>,
    shape: usize,
    xy: (i32, i32),
    c: RGBColor,
    hollow: bool,
) -> anyhow::Result<()> {
    let style = if hollow {
        c.stroke_width(1)
    } else {
        c.filled()
    };
    let (x, y) = xy;
    match shape % MARKERS.len() {
        0 => area.draw(&Circle::new(xy, 4, style)),
        1 => area.draw(&TriangleMarker::new(xy, 5, style)),
        2 => area.draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], style)),
        _ => area.draw(&Cross::new(xy, 4, c.stroke_width(2))),
    }
    .map_err(draw_err)
}
