//! When to draw: the frame-rate cap, its interplay with vsync, redrawing only on change, and
//! the percentiles of the timings reported.

use std::time::{Duration, Instant};

/// Percentiles of a sample set, in the samples' unit.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Spaces frames so that at most `cap` are drawn per second, whatever else paces the loop
/// (vsync or nothing). Frames are due on a fixed grid, `1/cap` apart, so the long-run rate is
/// never above the cap; a frame may start an eighth of a period early, so that a display whose
/// refresh is a hair faster than the cap is not halved by waiting for the next vertical blank.
/// A loop that falls more than a period behind starts a new grid rather than catching up in a
/// burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramePacer {
    period: Option<Duration>,
    next: Option<Instant>,
}

impl FramePacer {
    /// A pacer for at most `cap` frames per second; 0 is unlimited.
    pub fn new(cap: u32) -> FramePacer {
        FramePacer {
            period: (cap > 0).then(|| Duration::from_secs_f64(1.0 / f64::from(cap))),
            next: None,
        }
    }

    /// The time between frames at the cap (`None`: unlimited).
    pub fn period(&self) -> Option<Duration> {
        self.period
    }

    /// Whether a frame may start at `now`; when it may, the frame is counted.
    pub fn try_frame(&mut self, now: Instant) -> bool {
        let Some(period) = self.period else {
            return true;
        };
        match self.next {
            Some(next) if now + period / 8 < next => false,
            Some(next) => {
                self.next = Some(if now >= next + period {
                    now + period
                } else {
                    next + period
                });
                true
            }
            None => {
                self.next = Some(now + period);
                true
            }
        }
    }

    /// When the next frame may start (`None`: at any time).
    pub fn next_due(&self) -> Option<Instant> {
        let (period, next) = (self.period?, self.next?);
        Some(next.checked_sub(period / 8).unwrap_or(next))
    }
}

/// The cap the stage's pacer needs: `fps_cap`, or 0 when vsync already holds the display
/// (`refresh_mhz`, in millihertz, when known) at or below it, so the two never fight.
pub fn effective_cap(fps_cap: u32, vsync: bool, refresh_mhz: Option<u32>) -> u32 {
    match refresh_mhz {
        Some(mhz)
            if vsync
                && fps_cap > 0
                && mhz > 0
                && f64::from(mhz) / 1000.0 <= f64::from(fps_cap) + 0.5 =>
        {
            0
        }
        _ => fps_cap,
    }
}

/// Whether to draw: always when rendering continuously; with `render_on_change`, only when a
/// new frame arrived or something else changed (camera, size, prompt, background, mapping).
pub fn wants_redraw(render_on_change: bool, new_frame: bool, changed: bool) -> bool {
    !render_on_change || new_frame || changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 51);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[7], 99.0), 7);
    }

    #[test]
    fn pacer_never_exceeds_the_cap() {
        for cap in [30u32, 60, 144] {
            let mut pacer = FramePacer::new(cap);
            let start = Instant::now();
            // A loop trying to draw every half millisecond for three seconds.
            let mut drawn = Vec::new();
            for step in 0..6000u64 {
                let now = start + Duration::from_micros(step * 500);
                if pacer.try_frame(now) {
                    drawn.push(now - start);
                }
            }
            let total = drawn.len() as u32;
            assert!(total <= 3 * cap + 1, "cap {cap}: {total} frames in 3 s");
            assert!(
                total + 2 >= 3 * cap,
                "cap {cap}: only {total} frames in 3 s"
            );
            for window in 0..5 {
                let from = Duration::from_millis(window * 500);
                let in_window = drawn
                    .iter()
                    .filter(|t| **t >= from && **t < from + Duration::from_secs(1))
                    .count() as u32;
                assert!(in_window <= cap + 1, "cap {cap}: {in_window} in one second");
            }
        }
    }

    #[test]
    fn pacer_restarts_its_grid_after_a_stall_instead_of_bursting() {
        let mut pacer = FramePacer::new(60);
        let start = Instant::now();
        assert!(pacer.try_frame(start));
        // A one-second stall, then a loop trying every millisecond.
        let resume = start + Duration::from_secs(1);
        let burst = (0..20)
            .filter(|ms| pacer.try_frame(resume + Duration::from_millis(*ms)))
            .count();
        assert_eq!(burst, 2, "one frame at once, the next a period later");
        assert!(pacer.next_due().is_some_and(|due| due > resume));
        let mut unlimited = FramePacer::new(0);
        assert!((0..100).all(|_| unlimited.try_frame(start)));
        assert_eq!(unlimited.next_due(), None);
    }

    #[test]
    fn vsync_at_or_below_the_cap_needs_no_pacer() {
        assert_eq!(effective_cap(60, true, Some(60_000)), 0);
        assert_eq!(effective_cap(60, true, Some(59_940)), 0);
        assert_eq!(effective_cap(60, true, Some(144_000)), 60);
        assert_eq!(effective_cap(60, false, Some(60_000)), 60);
        assert_eq!(effective_cap(60, true, None), 60);
        assert_eq!(effective_cap(0, true, Some(60_000)), 0);
    }

    #[test]
    fn render_on_change_draws_nothing_while_still() {
        assert!(!wants_redraw(true, false, false));
        assert!(wants_redraw(true, true, false));
        assert!(wants_redraw(true, false, true));
        assert!(wants_redraw(false, false, false));
    }
}
