//! Motion at the display rate: turns the stream of calibrated frames into the frame to draw now.
//!
//! Phones send 30 or 60 frames a second; the stage draws at the display's rate (60–144 Hz).
//! Drawing the newest frame as it is moves the head, the eyes and the 52 weights in steps: at
//! 30 Hz input and 144 Hz display each pose stays on screen for four or five draws, then jumps.
//! [`Motion`] keeps the last few frames the renderer took and blends them at draw time:
//!
//! - [`MotionMode::Interpolate`] (the default) draws the stream one *sender period* late and
//!   blends between the two frames around that moment: rotations by spherical interpolation
//!   along the shortest path, weights linearly. It never invents a pose the phone did not send,
//!   so it cannot overshoot. **It adds one sender period of latency**: 33 ms for a 30 Hz sender,
//!   17 ms at 60 Hz ([`Motion::latency`] says the figure in use). The period is the median of the
//!   last 16 intervals between frames, clamped to 8–100 ms by default.
//! - [`MotionMode::Extrapolate`] adds no latency: it continues the last two frames' motion past
//!   the newest frame for at most one period (and at most [`MotionSettings::max_horizon`]). It
//!   overshoots whenever the motion turns, and each new frame corrects the guess with a jump.
//! - [`MotionMode::Off`] draws the newest frame unchanged, as facewire did before.
//!
//! Interpolation is the default because it measured best ("Head motion at the display rate" in
//! `BENCHMARKS.md`): on a real Live Link Face take thinned to 30 Hz and drawn at 144 Hz, its head
//! error against the true motion (shifted by its latency) is 0.18° RMS, against 1.99° for
//! stepping and 0.66° for extrapolation, and its largest turn between two draws is 1.3° (the
//! true motion's: 1.4°), against 6.1° and 3.9°. Stepping itself lags half a period on average
//! (a best-fitting lag of 16.5 ms at 30 Hz), so against today's stepped drawing interpolation
//! costs about half a period more: some 17 ms at 30 Hz, 8 ms at 60 Hz.
//!
//! The timeline is the frames' arrival times (`received`); the sender's clock is not used, since
//! most protocols do not carry one. Frames that arrive closer together than half a period (a
//! burst after a network stall) are spread out to half a period apart, so a burst plays as quick
//! motion instead of a jump. A frame that arrives after a gap longer than
//! [`MotionSettings::gap_periods`] periods (tracking loss, a paused phone) is shown at once, without
//! sliding from the stale pose. A rotation is drawn only when the newest frame carries it, so a
//! frame without a head keeps `head: None`; every other field (channel mask, tracking flag,
//! sender, times) is the newest frame's. Output weights are finite and within `[0, 1]`, output
//! rotations finite and unit length, whatever the timing of the calls.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use glam::Quat;

use crate::arkit::{FaceFrame, COUNT};

/// How many recent intervals between frames the period estimate takes the median of.
const INTERVALS: usize = 16;

/// How many frames are kept for blending (enough to span the longest delay at the shortest
/// spacing while the delay adapts).
const KEYS: usize = 16;

/// The period assumed before two frames have arrived: 30 Hz, the slower of the usual rates, so
/// that the first frames of a 60 Hz sender are late rather than held.
const INITIAL_PERIOD: f64 = 1.0 / 30.0;

/// How fast the interpolation delay follows a changed period: at most this many seconds of delay
/// change per second of display time, so the drawn timeline never runs backwards.
const DELAY_SLEW: f64 = 0.1;

/// The longest display-time step the delay slew counts (a stalled renderer does not jump it).
const MAX_SLEW_STEP: f64 = 0.1;

pub use crate::config::MotionMode;

/// The settings of [`Motion`]. Out-of-range values are brought into range by [`Motion::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionSettings {
    /// How frames are blended.
    pub mode: MotionMode,
    /// The shortest sender period the estimate may give (default 8 ms, a 125 Hz sender).
    pub min_period: Duration,
    /// The longest sender period the estimate may give (default 100 ms, a 10 Hz sender); longer
    /// intervals are not counted in the estimate.
    pub max_period: Duration,
    /// An interval longer than this many periods is a gap: the frame after it is shown at once
    /// instead of being slid to from the stale pose (default 3, at least 1).
    pub gap_periods: f32,
    /// The furthest [`MotionMode::Extrapolate`] looks past the newest frame (default 50 ms); it
    /// never looks further than one period either.
    pub max_horizon: Duration,
}

impl Default for MotionSettings {
    fn default() -> MotionSettings {
        MotionSettings {
            mode: MotionMode::default(),
            min_period: Duration::from_millis(8),
            max_period: Duration::from_millis(100),
            gap_periods: 3.0,
            max_horizon: Duration::from_millis(50),
        }
    }
}

impl MotionSettings {
    /// The same settings with every value in range: periods at least 1 ms and ordered, the gap
    /// at least one period, a finite horizon.
    fn sanitised(self) -> MotionSettings {
        let min_period = self.min_period.max(Duration::from_millis(1));
        let max_period = self.max_period.clamp(min_period, Duration::from_secs(10));
        let gap_periods = if self.gap_periods.is_finite() {
            self.gap_periods.clamp(1.0, 1000.0)
        } else {
            MotionSettings::default().gap_periods
        };
        MotionSettings {
            mode: self.mode,
            min_period,
            max_period,
            gap_periods,
            max_horizon: self.max_horizon.min(Duration::from_secs(10)),
        }
    }
}

/// One frame kept for blending, placed on the timeline.
#[derive(Debug, Clone, Copy)]
struct Key {
    /// Its place on the timeline, seconds after [`Motion::origin`].
    time: f64,
    /// The frame, with non-finite weights zeroed, weights clamped to `[0, 1]` and unusable
    /// rotations removed.
    frame: FaceFrame,
}

/// Turns the frames the renderer takes into the frame to draw at each redraw.
///
/// Call [`Motion::push`] with each new frame and [`Motion::sample`] once per draw. One `Motion`
/// serves one stream; [`Motion::reset`] forgets it (a new sender, a new performer).
#[derive(Debug, Clone)]
pub struct Motion {
    /// The settings, in range.
    settings: MotionSettings,
    /// The instant timeline seconds are counted from: the first frame's arrival.
    origin: Option<Instant>,
    /// Recent frames, oldest first, at increasing times.
    keys: VecDeque<Key>,
    /// Recent intervals between arrivals, seconds, each within the period range.
    intervals: VecDeque<f64>,
    /// The estimated sender period, seconds (the clamped median of `intervals`).
    period: f64,
    /// The newest frame's arrival, timeline seconds.
    last_arrival: Option<f64>,
    /// The newest frame as pushed: the source of every field that is not blended.
    newest: Option<FaceFrame>,
    /// The interpolation delay in use, seconds; follows `period` at a bounded rate.
    delay: Option<f64>,
    /// The time of the previous sample, timeline seconds.
    last_sample: Option<f64>,
    /// How many frames were shown at once after a gap.
    snaps: u64,
}

impl Motion {
    /// An empty stream with the given settings (brought into range).
    pub fn new(settings: MotionSettings) -> Motion {
        Motion {
            settings: settings.sanitised(),
            origin: None,
            keys: VecDeque::with_capacity(KEYS + 1),
            intervals: VecDeque::with_capacity(INTERVALS + 1),
            period: INITIAL_PERIOD,
            last_arrival: None,
            newest: None,
            delay: None,
            last_sample: None,
            snaps: 0,
        }
    }

    /// The settings in use (after range checks).
    pub fn settings(&self) -> MotionSettings {
        self.settings
    }

    /// Forgets every frame and estimate; the next frame is shown as it is.
    pub fn reset(&mut self) {
        *self = Motion::new(self.settings);
    }

    /// The latency the blending adds to the newest frame: the interpolation delay (one estimated
    /// sender period) for [`MotionMode::Interpolate`], zero otherwise.
    pub fn latency(&self) -> Duration {
        match self.settings.mode {
            MotionMode::Interpolate => {
                Duration::from_secs_f64(self.delay.unwrap_or(self.period).max(0.0))
            }
            MotionMode::Off | MotionMode::Extrapolate => Duration::ZERO,
        }
    }

    /// The estimated sender period: the median of recent intervals between frames, clamped to
    /// the settings' range (1/30 s before two frames have arrived).
    pub fn period(&self) -> Duration {
        Duration::from_secs_f64(self.period)
    }

    /// From when on [`Motion::sample`] keeps giving the same frame until the next one arrives
    /// (`None` before the first frame): a stage that draws only on change keeps drawing until
    /// then.
    pub fn settles_at(&self) -> Option<Instant> {
        let origin = self.origin?;
        let last = self.keys.back()?.time;
        let after = match self.settings.mode {
            MotionMode::Off => 0.0,
            MotionMode::Interpolate => self.delay.unwrap_or(self.period).max(self.period),
            MotionMode::Extrapolate => self.settings.max_horizon.as_secs_f64().min(self.period),
        };
        let at = last + after;
        if !at.is_finite() || at < 0.0 {
            return Some(origin);
        }
        Some(origin + Duration::from_secs_f64(at))
    }

    /// How many frames were shown at once because they came after a gap.
    pub fn snaps(&self) -> u64 {
        self.snaps
    }

    /// Seconds from the origin to `t` (negative before it).
    fn seconds(origin: Instant, t: Instant) -> f64 {
        match t.checked_duration_since(origin) {
            Some(after) => after.as_secs_f64(),
            None => -origin.saturating_duration_since(t).as_secs_f64(),
        }
    }

    /// Takes a new frame (the newest the renderer took from the hand-off).
    pub fn push(&mut self, frame: &FaceFrame) {
        let origin = *self.origin.get_or_insert(frame.received);
        let arrival = Motion::seconds(origin, frame.received);
        let mut gap = false;
        if let Some(last) = self.last_arrival {
            let interval = arrival - last;
            let (min, max) = self.period_range();
            // A little over the longest period still counts (rounding, jitter), as the longest.
            if interval > 0.0 && interval <= max * 1.25 {
                if self.intervals.len() == INTERVALS {
                    self.intervals.pop_front();
                }
                self.intervals.push_back(interval.clamp(min, max));
                self.period = median(&self.intervals).clamp(min, max);
            }
            gap = interval > f64::from(self.settings.gap_periods) * self.period;
        }
        if gap {
            self.snaps += 1;
            tracing::trace!(snaps = self.snaps, "frame after a gap: shown at once");
            self.keys.clear();
        }
        // Frames closer than half a period (a burst, identical or out-of-order instants) are
        // spread out so that blending never divides by a vanishing interval.
        let time = match self.keys.back() {
            Some(previous) => arrival.max(previous.time + self.period / 2.0),
            None => arrival,
        };
        if self.keys.len() == KEYS {
            self.keys.pop_front();
        }
        self.keys.push_back(Key {
            time,
            frame: sanitised(frame),
        });
        self.last_arrival = Some(arrival);
        self.newest = Some(*frame);
    }

    /// The frame to draw at `now`; `None` before the first frame.
    pub fn sample(&mut self, now: Instant) -> Option<FaceFrame> {
        let newest = self.newest?;
        let origin = self.origin?;
        let now = Motion::seconds(origin, now);
        let previous_sample = self.last_sample.replace(now);
        let keys = match self.settings.mode {
            MotionMode::Off => return Some(newest),
            MotionMode::Interpolate => {
                let elapsed = previous_sample.map_or(0.0, |p| (now - p).clamp(0.0, MAX_SLEW_STEP));
                let step = DELAY_SLEW * elapsed;
                let delay = match self.delay {
                    Some(d) => d + (self.period - d).clamp(-step, step),
                    None => self.period,
                };
                self.delay = Some(delay);
                self.interpolation_keys(now - delay)
            }
            MotionMode::Extrapolate => self.extrapolation_keys(now),
        };
        // `push` always leaves a key, so `keys` is `None` only in theory.
        let (a, b, f) = keys.unwrap_or_else(|| {
            let key = Key {
                time: now,
                frame: sanitised(&newest),
            };
            (key, key, 0.0)
        });
        Some(blend(&a.frame, &b.frame, f, &newest))
    }

    /// The keys around timeline time `at` and the fraction of the way from the first to the
    /// second; before the first key or after the last, that key alone.
    fn interpolation_keys(&self, at: f64) -> Option<(Key, Key, f32)> {
        let (first, last) = (*self.keys.front()?, *self.keys.back()?);
        if at.is_nan() || at <= first.time {
            return Some((first, first, 0.0));
        }
        if at >= last.time {
            return Some((last, last, 0.0));
        }
        // `first.time < at < last.time`, so `1 <= after < len`.
        let after = self.keys.partition_point(|k| k.time <= at);
        let (a, b) = (*self.keys.get(after - 1)?, *self.keys.get(after)?);
        Some((a, b, fraction(at - a.time, b.time - a.time)))
    }

    /// The last two keys and how far past the newest to go, as a fraction of their interval
    /// (1 plus the capped look-ahead).
    fn extrapolation_keys(&self, now: f64) -> Option<(Key, Key, f32)> {
        let n = self.keys.len();
        let last = *self.keys.back()?;
        if n < 2 {
            return Some((last, last, 0.0));
        }
        let previous = self.keys[n - 2];
        let horizon = self.settings.max_horizon.as_secs_f64().min(self.period);
        let ahead = (now - last.time).clamp(0.0, horizon);
        let ahead = if ahead.is_nan() { 0.0 } else { ahead };
        Some((
            previous,
            last,
            1.0 + fraction(ahead, last.time - previous.time),
        ))
    }

    /// The shortest and longest period allowed, seconds.
    fn period_range(&self) -> (f64, f64) {
        (
            self.settings.min_period.as_secs_f64(),
            self.settings.max_period.as_secs_f64(),
        )
    }
}

/// `part / whole` as `f32` in `[0, 2]`; 0 for an empty or non-finite ratio.
fn fraction(part: f64, whole: f64) -> f32 {
    let f = part / whole;
    if f.is_finite() && whole > 0.0 {
        f.clamp(0.0, 2.0) as f32
    } else {
        0.0
    }
}

/// The median of a non-empty list (the mean of the middle two for an even count); the initial
/// period for an empty one.
fn median(values: &VecDeque<f64>) -> f64 {
    let mut sorted: [f64; INTERVALS] = [0.0; INTERVALS];
    let n = values.len().min(INTERVALS);
    for (slot, v) in sorted.iter_mut().zip(values.iter()) {
        *slot = *v;
    }
    let sorted = &mut sorted[..n];
    sorted.sort_by(f64::total_cmp);
    match n {
        0 => INITIAL_PERIOD,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A copy of `frame` fit for blending: weights finite and within `[0, 1]`, rotations unit
/// length, a non-finite or zero rotation removed.
fn sanitised(frame: &FaceFrame) -> FaceFrame {
    let mut out = *frame;
    for w in &mut out.weights {
        *w = clamp_weight(*w);
    }
    out.head = unit(frame.head);
    out.left_eye = unit(frame.left_eye);
    out.right_eye = unit(frame.right_eye);
    out
}

/// A weight within `[0, 1]`; NaN becomes 0.
fn clamp_weight(w: f32) -> f32 {
    if w.is_nan() {
        0.0
    } else {
        w.clamp(0.0, 1.0)
    }
}

/// `q` normalised, or `None` when it is absent, not finite or of (nearly) zero length.
fn unit(q: Option<Quat>) -> Option<Quat> {
    let q = q?;
    let length = q.length();
    (q.is_finite() && length.is_finite() && length > 1e-6).then(|| q / length)
}

/// The rotation a fraction `f` of the way from `a` to `b` along the shortest arc: `a` at 0, `b`
/// at 1, beyond `b` (the same angular velocity continued) above 1. Both must be unit length.
fn rotate_towards(a: Quat, b: Quat, f: f32) -> Quat {
    // The rotation taking `a` to `b`, on the short side (q and -q are the same rotation).
    let mut delta = b * a.conjugate();
    if delta.w < 0.0 {
        delta = -delta;
    }
    let out = Quat::from_scaled_axis(delta.to_scaled_axis() * f) * a;
    unit(Some(out)).unwrap_or(b)
}

/// The frame `f` of the way from `a` to `b` (beyond `b` when `f > 1`), with every unblended field
/// and the set of rotations taken from `newest`. `a` and `b` are sanitised.
fn blend(a: &FaceFrame, b: &FaceFrame, f: f32, newest: &FaceFrame) -> FaceFrame {
    let mut out = *newest;
    for i in 0..COUNT {
        let channel = crate::arkit::Channel::ALL[i];
        out.weights[i] = if a.present.contains(channel) && b.present.contains(channel) {
            clamp_weight(a.weights[i] + (b.weights[i] - a.weights[i]) * f)
        } else {
            clamp_weight(newest.weights[i])
        };
    }
    let rotation = |pick: fn(&FaceFrame) -> Option<Quat>| -> Option<Quat> {
        let newest = unit(pick(newest))?;
        Some(match (pick(a), pick(b)) {
            (Some(qa), Some(qb)) => rotate_towards(qa, qb, f),
            (_, Some(qb)) => qb,
            (Some(qa), None) => qa,
            (None, None) => newest,
        })
    };
    out.head = rotation(|fr| fr.head);
    out.left_eye = rotation(|fr| fr.left_eye);
    out.right_eye = rotation(|fr| fr.right_eye);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol, TrackingFlag};
    use glam::Vec3;

    fn at(base: Instant, ms: f64) -> Instant {
        if ms >= 0.0 {
            base + Duration::from_secs_f64(ms / 1000.0)
        } else {
            base - Duration::from_secs_f64(-ms / 1000.0)
        }
    }

    /// A frame received at `ms` after `base` with the head turned `yaw_deg` about Y and jawOpen
    /// at `jaw`.
    fn frame(base: Instant, ms: f64, yaw_deg: f32, jaw: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), at(base, ms));
        f.tracking = TrackingFlag::Tracked;
        f.head = Some(Quat::from_rotation_y(yaw_deg.to_radians()));
        f.left_eye = Some(Quat::from_rotation_x((yaw_deg / 4.0).to_radians()));
        f.right_eye = Some(Quat::from_rotation_x((yaw_deg / 4.0).to_radians()));
        f.set(Channel::JawOpen, jaw);
        f
    }

    fn yaw_deg(q: Quat) -> f32 {
        let (axis, angle) = q.to_axis_angle();
        (angle * axis.y.signum()).to_degrees()
    }

    fn angle_deg(a: Quat, b: Quat) -> f32 {
        let d = a.conjugate() * b;
        (2.0 * Vec3::new(d.x, d.y, d.z).length().atan2(d.w.abs())).to_degrees()
    }

    fn settings(mode: MotionMode) -> MotionSettings {
        MotionSettings {
            mode,
            ..MotionSettings::default()
        }
    }

    fn assert_sane(f: &FaceFrame) {
        for w in f.weights {
            assert!(w.is_finite() && (0.0..=1.0).contains(&w), "weight {w}");
        }
        for q in [f.head, f.left_eye, f.right_eye].into_iter().flatten() {
            assert!(q.is_finite() && q.is_normalized(), "rotation {q}");
        }
    }

    #[test]
    fn nothing_before_the_first_frame_and_after_reset() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        assert!(m.sample(base).is_none());
        m.push(&frame(base, 0.0, 10.0, 0.5));
        let first = m.sample(at(base, 5.0)).unwrap();
        assert!(
            (yaw_deg(first.head.unwrap()) - 10.0).abs() < 1e-4,
            "first frame as sent"
        );
        m.reset();
        assert!(m.sample(at(base, 10.0)).is_none());
        assert_eq!(m.latency(), Duration::from_secs_f64(INITIAL_PERIOD));
    }

    #[test]
    fn motion_settles_one_period_after_the_newest_frame() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        assert_eq!(m.settles_at(), None);
        for n in 0..6 {
            m.push(&frame(base, n as f64 * 1000.0 / 30.0, n as f32, 0.1));
        }
        let settles = m.settles_at().unwrap();
        let newest = at(base, 5.0 * 1000.0 / 30.0);
        let after = settles.duration_since(newest).as_secs_f64();
        assert!(
            (after - 1.0 / 30.0).abs() < 1e-3,
            "settles {after} s after the newest"
        );
        // From then on the sample is the newest frame.
        let late = m.sample(settles + Duration::from_millis(1)).unwrap();
        assert!((yaw_deg(late.head.unwrap()) - 5.0).abs() < 1e-3);
        let mut off = Motion::new(settings(MotionMode::Off));
        off.push(&frame(base, 0.0, 1.0, 0.1));
        assert_eq!(off.settles_at(), Some(base));
    }

    /// A ramp of 3 degrees and 0.03 jawOpen per frame at 30 Hz, sampled at 144 Hz.
    fn ramp_30hz(mode: MotionMode) -> Vec<FaceFrame> {
        let base = Instant::now();
        let mut m = Motion::new(settings(mode));
        let mut out = Vec::new();
        let mut next = 0;
        for n in 0..(144 * 2) {
            let t = n as f64 * 1000.0 / 144.0;
            while (next as f64) * 1000.0 / 30.0 <= t {
                m.push(&frame(
                    base,
                    next as f64 * 1000.0 / 30.0,
                    3.0 * next as f32,
                    0.01 * next as f32,
                ));
                next += 1;
            }
            if t > 500.0 {
                out.push(m.sample(at(base, t)).unwrap());
            } else {
                m.sample(at(base, t));
            }
        }
        out
    }

    #[test]
    fn steps_become_smooth_at_30hz_in_144hz_out() {
        // Stepping holds each pose for four or five draws, then jumps a whole frame (3 degrees).
        let steps = ramp_30hz(MotionMode::Off);
        let step_max = steps
            .windows(2)
            .map(|w| angle_deg(w[0].head.unwrap(), w[1].head.unwrap()))
            .fold(0.0, f32::max);
        assert!(step_max > 2.9, "stepping jumps a whole frame: {step_max}");
        // Interpolation moves every draw by 3 degrees × 30/144 = 0.625 degrees.
        let smooth = ramp_30hz(MotionMode::Interpolate);
        for w in smooth.windows(2) {
            let d = angle_deg(w[0].head.unwrap(), w[1].head.unwrap());
            assert!((d - 0.625).abs() < 0.01, "increment {d}");
            let dj =
                w[1].weights[Channel::JawOpen.index()] - w[0].weights[Channel::JawOpen.index()];
            assert!(
                (dj - 0.01 * 30.0 / 144.0).abs() < 1e-4,
                "jaw increment {dj}"
            );
        }
    }

    #[test]
    fn interpolation_is_exact_at_midpoints_one_period_late() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        // A steady 30 Hz stream fixes the period at 1/30 s.
        for k in 0..10 {
            m.push(&frame(base, k as f64 * 100.0 / 3.0, 0.0, 0.0));
            m.sample(at(base, k as f64 * 100.0 / 3.0));
        }
        assert!((m.period().as_secs_f64() - 1.0 / 30.0).abs() < 1e-9);
        assert!((m.latency().as_secs_f64() - 1.0 / 30.0).abs() < 1e-9);
        let t10 = 1000.0 / 3.0;
        m.push(&frame(base, t10, 20.0, 0.8));
        // Halfway between frame 9 (0°, 0) and frame 10 (20°, 0.8), one period late.
        let mid = m.sample(at(base, t10 + 50.0 / 3.0)).unwrap();
        assert!((yaw_deg(mid.head.unwrap()) - 10.0).abs() < 1e-3);
        assert!((mid.get(Channel::JawOpen).unwrap() - 0.4).abs() < 1e-5);
        let eye = mid.left_eye.unwrap();
        assert!((angle_deg(eye, Quat::from_rotation_x(2.5f32.to_radians()))) < 1e-3);
        // A quarter of the way.
        let quarter = m
            .sample(at(base, t10 + 100.0 / 3.0 * 0.25 + 100.0 / 3.0 * 0.5))
            .unwrap();
        assert!((yaw_deg(quarter.head.unwrap()) - 15.0).abs() < 1e-3);
        // One period after frame 10 arrived, frame 10 exactly; later, it is held.
        let end = m.sample(at(base, t10 + 100.0 / 3.0)).unwrap();
        assert!((yaw_deg(end.head.unwrap()) - 20.0).abs() < 1e-4);
        let held = m.sample(at(base, t10 + 80.0)).unwrap();
        assert!((yaw_deg(held.head.unwrap()) - 20.0).abs() < 1e-4);
    }

    #[test]
    fn slerp_takes_the_short_way_across_the_sign_flip() {
        let a = Quat::from_rotation_y(170f32.to_radians());
        // -170° about Y is 190°: the short way from 170° passes 180°, the long way 0°. The two
        // quaternions lie on opposite hemispheres, so a plain blend would take the long way.
        let b = Quat::from_rotation_y((-170f32).to_radians());
        assert!(a.dot(b) < 0.0, "the two ends are on opposite hemispheres");
        let mid = rotate_towards(a, b, 0.5);
        assert!(angle_deg(mid, Quat::from_rotation_y(180f32.to_radians())) < 1e-3);
        // Through `Motion` too: a sender that flips the sign of its quaternions.
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        let mut f0 = frame(base, 0.0, 0.0, 0.0);
        f0.head = Some(Quat::from_rotation_y(10f32.to_radians()));
        let mut f1 = frame(base, 100.0 / 3.0, 0.0, 0.0);
        f1.head = Some(-Quat::from_rotation_y(20f32.to_radians()));
        m.push(&f0);
        m.sample(at(base, 0.0));
        m.push(&f1);
        let mid = m.sample(at(base, 100.0 / 3.0 + 50.0 / 3.0)).unwrap();
        assert!(angle_deg(mid.head.unwrap(), Quat::from_rotation_y(15f32.to_radians())) < 1e-3);
    }

    #[test]
    fn a_gap_snaps_instead_of_sliding() {
        let base = Instant::now();
        for mode in [MotionMode::Interpolate, MotionMode::Extrapolate] {
            let mut m = Motion::new(settings(mode));
            for k in 0..10 {
                m.push(&frame(base, k as f64 * 100.0 / 3.0, 0.0, 0.0));
                m.sample(at(base, k as f64 * 100.0 / 3.0 + 1.0));
            }
            // Tracking returns half a second later with the head turned.
            m.push(&frame(base, 800.0, 40.0, 1.0));
            let f = m.sample(at(base, 801.0)).unwrap();
            assert_eq!(m.snaps(), 1, "{mode}");
            assert!((yaw_deg(f.head.unwrap()) - 40.0).abs() < 1e-4, "{mode}");
            assert_eq!(f.get(Channel::JawOpen), Some(1.0));
            // And the motion after it starts from there.
            m.push(&frame(base, 800.0 + 100.0 / 3.0, 43.0, 1.0));
            let g = m.sample(at(base, 800.0 + 100.0 / 3.0 + 1.0)).unwrap();
            assert!(yaw_deg(g.head.unwrap()) >= 40.0 - 1e-3, "{mode}");
        }
    }

    #[test]
    fn a_short_delay_does_not_snap() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        for k in 0..10 {
            m.push(&frame(base, k as f64 * 100.0 / 3.0, 0.0, 0.0));
        }
        // Two periods late: a late frame, not a gap.
        m.push(&frame(base, 9.0 * 100.0 / 3.0 + 200.0 / 3.0, 10.0, 0.0));
        assert_eq!(m.snaps(), 0);
    }

    #[test]
    fn frames_without_a_head_keep_none() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        m.push(&frame(base, 0.0, 10.0, 0.2));
        m.sample(at(base, 1.0));
        let mut lost = frame(base, 100.0 / 3.0, 0.0, 0.3);
        lost.head = None;
        lost.tracking = TrackingFlag::Lost;
        m.push(&lost);
        let f = m.sample(at(base, 100.0 / 3.0 + 1.0)).unwrap();
        assert_eq!(f.head, None);
        assert_eq!(f.tracking, TrackingFlag::Lost);
        assert!(f.left_eye.is_some());
        // The head returns: shown as sent (nothing to blend it with), then blended again.
        m.push(&frame(base, 200.0 / 3.0, 20.0, 0.3));
        let f = m.sample(at(base, 200.0 / 3.0 + 1.0)).unwrap();
        assert!((yaw_deg(f.head.unwrap()) - 20.0).abs() < 1e-4);
        assert_eq!(f.tracking, TrackingFlag::Tracked);
    }

    #[test]
    fn unblended_fields_come_from_the_newest_frame() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        m.push(&frame(base, 0.0, 0.0, 0.2));
        m.sample(at(base, 1.0));
        let mut newer = frame(base, 100.0 / 3.0, 10.0, 0.4);
        newer.sender_time = Some(12.5);
        newer.set(Channel::TongueOut, 0.7);
        m.push(&newer);
        let f = m.sample(at(base, 100.0 / 3.0 + 1.0)).unwrap();
        assert_eq!(f.sender_time, Some(12.5));
        assert_eq!(f.received, newer.received);
        assert_eq!(f.present, newer.present);
        // tongueOut was not in the older frame: nothing to blend, so the newest value.
        assert_eq!(f.get(Channel::TongueOut), Some(0.7));
        // jawOpen is blended: still near the older frame's value.
        assert!(f.get(Channel::JawOpen).unwrap() < 0.21);
    }

    #[test]
    fn extrapolation_continues_the_motion_and_clamps() {
        let base = Instant::now();
        let mut m = Motion::new(settings(MotionMode::Extrapolate));
        assert_eq!(m.latency(), Duration::ZERO);
        for k in 0..6 {
            let t = k as f64 * 100.0 / 3.0;
            m.push(&frame(base, t, 2.0 * k as f32, 0.1 + 0.17 * k as f32));
        }
        let last = 5.0 * 100.0 / 3.0;
        // Half a period after the newest frame: half a step further.
        let f = m.sample(at(base, last + 50.0 / 3.0)).unwrap();
        assert!((yaw_deg(f.head.unwrap()) - 11.0).abs() < 1e-3);
        assert_eq!(
            f.get(Channel::JawOpen),
            Some(1.0),
            "0.95 + 0.085 clamps to 1"
        );
        // The look-ahead is capped at one period.
        let g = m.sample(at(base, last + 1000.0)).unwrap();
        assert!((yaw_deg(g.head.unwrap()) - 12.0).abs() < 1e-3);
        // Falling weights clamp at 0.
        let mut m = Motion::new(settings(MotionMode::Extrapolate));
        m.push(&frame(base, 0.0, 0.0, 0.6));
        m.push(&frame(base, 100.0 / 3.0, 0.0, 0.05));
        let h = m.sample(at(base, 100.0 / 3.0 + 30.0)).unwrap();
        assert_eq!(h.get(Channel::JawOpen), Some(0.0));
    }

    #[test]
    fn off_is_the_newest_frame_unchanged() {
        let base = Instant::now();
        let mut m = Motion::new(settings(MotionMode::Off));
        m.push(&frame(base, 0.0, 0.0, 0.2));
        let newer = frame(base, 100.0 / 3.0, 10.0, 0.4);
        m.push(&newer);
        assert_eq!(m.sample(at(base, 40.0)), Some(newer));
        assert_eq!(m.latency(), Duration::ZERO);
    }

    #[test]
    fn the_period_is_the_median_and_clamped() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        // 60 Hz with one burst pair and one late frame: the median ignores both.
        let times = [
            0.0, 16.7, 33.3, 50.0, 51.0, 83.3, 100.0, 116.7, 140.0, 150.0, 166.7,
        ];
        for t in times {
            m.push(&frame(base, t, 0.0, 0.0));
        }
        let p = m.period().as_secs_f64() * 1000.0;
        assert!((p - 16.7).abs() < 0.5, "period {p} ms");
        // A 200 Hz sender is clamped to 8 ms.
        let mut m = Motion::new(MotionSettings::default());
        for k in 0..20 {
            m.push(&frame(base, k as f64 * 5.0, 0.0, 0.0));
        }
        assert_eq!(m.period(), Duration::from_millis(8));
        // A sender that slows to 10 Hz is followed (no longer treated as a gap).
        for k in 0..20 {
            m.push(&frame(base, 200.0 + k as f64 * 100.0, 0.0, 0.0));
        }
        assert_eq!(m.period(), Duration::from_millis(100));
    }

    #[test]
    fn a_burst_plays_as_quick_motion_not_a_jump() {
        let base = Instant::now();
        let mut m = Motion::new(MotionSettings::default());
        let p = 100.0 / 3.0;
        for k in 0..10 {
            m.push(&frame(base, k as f64 * p, 3.0 * k as f32, 0.0));
            m.sample(at(base, k as f64 * p + 1.0));
        }
        // Frames 10 and 11 arrive together, late; frame 12 on time.
        let mut samples = Vec::new();
        let mut pushed = 10;
        for n in 0..60 {
            let t = 9.0 * p + 2.0 + n as f64 * 1000.0 / 144.0;
            if pushed == 10 && t >= 11.0 * p {
                m.push(&frame(base, 11.0 * p, 30.0, 0.0));
                m.push(&frame(base, 11.0 * p, 33.0, 0.0));
                pushed = 12;
            }
            if pushed == 12 && t >= 12.0 * p {
                m.push(&frame(base, 12.0 * p, 36.0, 0.0));
                pushed = 13;
            }
            samples.push(m.sample(at(base, t)).unwrap());
        }
        for w in samples.windows(2) {
            let d = angle_deg(w[0].head.unwrap(), w[1].head.unwrap());
            // Stepping would jump 6 degrees (27 to 33) when the pair arrives.
            assert!(d < 2.0, "no jump: {d} degrees in one draw");
        }
        let last = yaw_deg(samples.last().unwrap().head.unwrap());
        assert!((last - 36.0).abs() < 1e-3, "catches up: {last}");
    }

    #[test]
    fn hostile_timing_never_gives_nan() {
        let base = Instant::now() + Duration::from_secs(3600);
        for mode in [
            MotionMode::Off,
            MotionMode::Interpolate,
            MotionMode::Extrapolate,
        ] {
            let mut m = Motion::new(settings(mode));
            let mut weird = frame(base, 0.0, 10.0, 0.5);
            weird.weights[3] = f32::NAN;
            weird.weights[4] = f32::INFINITY;
            weird.set(Channel::JawOpen, 7.0);
            m.push(&weird);
            let pushes = [
                0.0,
                0.0,
                0.0,
                -50.0,
                1e-6,
                -3.6e6,
                1e9,
                1e9,
                1e9 + 0.001,
                5.0,
                2e9,
                0.0,
            ];
            let samples = [0.0, -1e6, 1e12, 0.0, 1e9, -3.6e6, 1e9 + 0.5, 3.0, 2e9, 7.0];
            for (i, t) in pushes.iter().enumerate() {
                let mut f = frame(base, *t, (i * 37 % 360) as f32, (i as f32 * 0.37) % 1.3);
                if i % 3 == 1 {
                    f.head = Some(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
                }
                if i % 4 == 2 {
                    f.left_eye = Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
                }
                m.push(&f);
                for s in samples {
                    let out = m.sample(at(base, s)).unwrap();
                    if mode != MotionMode::Off {
                        assert_sane(&out);
                    }
                }
                assert!(m.latency() <= Duration::from_millis(100));
            }
        }
    }

    #[test]
    fn settings_are_brought_into_range() {
        let m = Motion::new(MotionSettings {
            mode: MotionMode::Interpolate,
            min_period: Duration::ZERO,
            max_period: Duration::ZERO,
            gap_periods: f32::NAN,
            max_horizon: Duration::MAX,
        });
        let s = m.settings();
        assert_eq!(s.min_period, Duration::from_millis(1));
        assert_eq!(s.max_period, Duration::from_millis(1));
        assert_eq!(s.gap_periods, 3.0);
        assert_eq!(s.max_horizon, Duration::from_secs(10));
        assert_eq!(
            "Extrapolate".parse::<MotionMode>(),
            Ok(MotionMode::Extrapolate)
        );
        assert!("wobble".parse::<MotionMode>().is_err());
    }
}
