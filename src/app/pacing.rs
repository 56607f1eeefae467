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

/// Notices a stage that keeps drawing below its cap: over each stretch of [`Shortfall::SPAN`]
/// of continuous drawing (no gap between frames longer than [`Shortfall::GAP`], which an idle
/// `render_on_change` stage or a hidden window makes), it measures the frame rate and reports
/// it once when the rate stayed under [`Shortfall::SHARE`] of the cap. The stage turns that
/// into advice (on a software rasteriser, where the CPU draws every pixel).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shortfall {
    /// The cap in frames per second (0: unpaced, never short).
    cap: u32,
    /// The first frame of the stretch being measured.
    start: Option<Instant>,
    /// The last frame seen.
    last: Option<Instant>,
    /// Frames after `start` in the stretch.
    frames: u32,
    /// Whether it was reported already.
    reported: bool,
}

impl Shortfall {
    /// How long a stretch of drawing is measured.
    pub const SPAN: Duration = Duration::from_secs(10);
    /// A pause between frames longer than this starts a new stretch.
    pub const GAP: Duration = Duration::from_millis(500);
    /// The share of the cap under which the rate counts as short.
    pub const SHARE: f64 = 0.85;

    /// A watch for a stage paced at `cap` frames per second (0: unpaced).
    pub fn new(cap: u32) -> Shortfall {
        Shortfall {
            cap,
            start: None,
            last: None,
            frames: 0,
            reported: false,
        }
    }

    /// Counts a frame drawn at `at`. Returns the rate of the stretch it ends, the first time
    /// a whole stretch stayed short of the cap; `None` otherwise.
    pub fn frame(&mut self, at: Instant) -> Option<f64> {
        if self.reported || self.cap == 0 {
            return None;
        }
        let gap = self.last.map(|last| at.saturating_duration_since(last));
        self.last = Some(at);
        let Some(start) = self.start.filter(|_| gap.is_some_and(|g| g <= Self::GAP)) else {
            self.start = Some(at);
            self.frames = 0;
            return None;
        };
        self.frames += 1;
        let elapsed = at.saturating_duration_since(start);
        if elapsed < Self::SPAN {
            return None;
        }
        let fps = f64::from(self.frames) / elapsed.as_secs_f64();
        self.start = Some(at);
        self.frames = 0;
        if fps < Self::SHARE * f64::from(self.cap) {
            self.reported = true;
            return Some(fps);
        }
        None
    }
}

/// What to tell a performer whose stage draws `fps` of its `target` frames a second on a
/// software rasteriser (`renderer`, the driver's name): why, and what helps, leaving out a
/// coarser level of detail where `lod` already draws one and the panel where it is closed.
pub fn software_advice(
    fps: f64,
    target: u32,
    renderer: &str,
    lod: crate::config::LodMode,
    panel_open: bool,
) -> String {
    let mut helps = Vec::new();
    if matches!(
        lod,
        crate::config::LodMode::Auto | crate::config::LodMode::Fixed(0)
    ) {
        helps.push("render.lod = 1 draws about a quarter more frames");
    }
    if panel_open {
        helps.push("closing the control panel (P) about a sixth more");
    }
    let meanwhile = if helps.is_empty() {
        String::new()
    } else {
        format!("; meanwhile {}", helps.join(" and "))
    };
    format!(
        "the stage draws {fps:.0} of its {target} frames a second on a software rasteriser \
         ({renderer}), which draws every pixel on the CPU: a GPU driver (Mesa's for AMD and \
         Intel, NVIDIA's own) draws far faster{meanwhile}"
    )
}

/// Whether to draw: always when rendering continuously; with `render_on_change`, only when a
/// new frame arrived or something else changed (camera, size, prompt, background, mapping).
pub fn wants_redraw(render_on_change: bool, new_frame: bool, changed: bool) -> bool {
    !render_on_change || new_frame || changed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `watch` a frame every `period_us` microseconds from `start` for `secs` seconds;
    /// returns the first report and the time after the last frame.
    fn draw(
        watch: &mut Shortfall,
        start: Instant,
        period_us: u64,
        secs: u64,
    ) -> (Option<f64>, Instant) {
        let (period, end) = (
            Duration::from_micros(period_us),
            start + Duration::from_secs(secs),
        );
        let mut at = start;
        let mut report = None;
        while at < end {
            report = report.or(watch.frame(at));
            at += period;
        }
        (report, at)
    }

    #[test]
    fn a_stage_short_of_its_cap_is_reported_once_with_its_rate() {
        let mut watch = Shortfall::new(60);
        let t0 = Instant::now();
        // 30 fps for nine seconds: not a whole stretch yet.
        let (report, t1) = draw(&mut watch, t0, 33_000, 9);
        assert_eq!(report, None);
        // Two more seconds complete it.
        let (report, t2) = draw(&mut watch, t1, 33_000, 2);
        let fps = report.expect("ten seconds at 30 of 60 fps are reported");
        assert!((fps - 30.3).abs() < 0.5, "{fps}");
        // Once only.
        assert_eq!(draw(&mut watch, t2, 33_000, 30).0, None);
    }

    #[test]
    fn a_stage_at_its_cap_or_pausing_or_unpaced_is_not_short() {
        let t0 = Instant::now();
        let mut at_cap = Shortfall::new(60);
        assert_eq!(
            draw(&mut at_cap, t0, 16_900, 60).0,
            None,
            "59 of 60 fps is not short"
        );
        // A stage drawing only on change: bursts at 60 fps with pauses between them, whose
        // mean rate is low, are not a slow stage.
        let mut bursts = Shortfall::new(60);
        let mut at = t0;
        for _ in 0..20 {
            let (report, end) = draw(&mut bursts, at, 16_700, 1);
            assert_eq!(report, None);
            at = end + Duration::from_secs(2);
        }
        let mut unpaced = Shortfall::new(0);
        assert_eq!(draw(&mut unpaced, t0, 100_000, 60).0, None);
    }

    #[test]
    fn software_advice_leaves_out_what_is_already_done() {
        use crate::config::LodMode;
        let full = software_advice(31.6, 60, "llvmpipe", LodMode::Auto, true);
        assert!(
            full.starts_with("the stage draws 32 of its 60 frames a second"),
            "{full}"
        );
        assert!(full.contains("(llvmpipe)"), "{full}");
        assert!(
            full.contains("render.lod = 1") && full.contains("control panel (P)"),
            "{full}"
        );
        let done = software_advice(40.0, 60, "llvmpipe", LodMode::Fixed(1), false);
        assert!(
            !done.contains("render.lod") && !done.contains("panel"),
            "{done}"
        );
        assert!(done.ends_with("draws far faster"), "{done}");
    }

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
