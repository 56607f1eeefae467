//! Per-frame conditioning in ARKit space: per-performer range remap, clamp to [0, 1], smoothing
//! per channel group (exponential or One Euro, timed by the sender's clock where it has one) and
//! the tracking-loss sequence. Pure functions over frames; no I/O.
//!
//! The stage turns the partial frames decoders commit into complete states: a channel the
//! sender left out of a frame keeps its last value, so the newest state alone describes the face
//! and the hand-off to the renderer may skip states safely.
//!
//! - [`Calibrator`]: remap, clamp, smooth, optional per-group normalisation.
//! - [`Conditioner`]: a calibrator plus the tracking-loss state machine, reporting each frame
//!   as the tracking layer and its weight for the mixer.
//! - [`filter`]: the scalar and rotation filters; [`settings`]: `[smoothing]` and `[tracking]`.
//! - [`profile`]: per-performer profiles; [`routine`]: the guided calibration routine and its
//!   statistics; [`driver`]: the interactive driver; [`offline`]: calibration from a
//!   recording, from the rest it finds in the take.

pub mod driver;
pub mod filter;
pub mod offline;
pub mod profile;
pub mod routine;
pub mod settings;
mod tracking;

use std::time::{Duration, Instant};

use glam::Quat;
use tracing::trace;

use crate::arkit::{ChannelMask, FaceFrame, COUNT};
pub use driver::{run_routine, Decision, DriveError, RoutineUi, TerminalUi};
use filter::{sane_rotation, Filter, RotationFilter};
pub use offline::{calibrate_offline, OfflineError, Rest, RestSource};
pub use profile::{ChannelProfile, Profile, ProfileError};
pub use routine::{
    minutes_and_seconds, routine_duration, Calibration, Flag, Phase, Prompt, Routine, Step,
    Summary, SummaryRow, PREPARE, STEPS,
};
pub use settings::{
    ClockSource, FilterKind, FilterSpec, GroupConfig, Groups, Invalid, SmoothingConfig,
    TrackingConfig,
};
pub use tracking::{
    Conditioner, LossReason, NeutralPose, Output, TrackingState, TrackingSummary, FRAME_INTERVAL,
};
/// The input range of one channel for one performer: `c_min` maps to 0 and `c_max` to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelRange {
    /// The raw value that means "not at all".
    pub min: f32,
    /// The raw value that means "fully".
    pub max: f32,
}

impl Default for ChannelRange {
    fn default() -> Self {
        ChannelRange { min: 0.0, max: 1.0 }
    }
}

/// How far below its range's end a channel must read for a captured neutral to re-zero it.
pub const NEUTRAL_HEADROOM: f32 = 0.05;

/// What [`Calibrator::capture_neutral`] changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NeutralCapture {
    /// Channels whose range now starts at the captured value.
    pub rezeroed: ChannelMask,
    /// Channels the frame carried that kept their range (they read too close to its end).
    pub kept: ChannelMask,
    /// The ranges now in use.
    pub ranges: [ChannelRange; COUNT],
    /// The head, left eye and right eye rest rotations now in use.
    pub rest: [Option<Quat>; 3],
}

/// Ranges closer than this are degenerate and pass the channel through unchanged.
pub const MIN_RANGE: f32 = 1e-4;

impl ChannelRange {
    /// `clamp((c - min) / (max - min), 0, 1)`; a degenerate range clamps `c` unchanged.
    pub fn apply(self, c: f32) -> f32 {
        let span = self.max - self.min;
        let w = if span.abs() < MIN_RANGE || !span.is_finite() {
            c
        } else {
            (c - self.min) / span
        };
        if w.is_nan() {
            0.0
        } else {
            w.clamp(0.0, 1.0)
        }
    }
}

/// The blend factor of an exponential filter with time constant `tau` after `dt`:
/// `1 - exp(-dt / tau)`. Applying it twice over `dt/2` equals applying it once over `dt`.
pub fn smoothing_alpha(dt: Duration, tau: f32) -> f32 {
    filter::ema_alpha(dt.as_secs_f32(), tau)
}

/// The longest gap treated as continuous motion; after a longer silence the filters restart.
pub const MAX_GAP: Duration = Duration::from_millis(500);

/// How far the sender's clock step may differ from the receive clock's step before the sender's
/// clock is distrusted for that frame. Wi-Fi bunches packets by tens of milliseconds; a step off
/// by more than this means a reset, a wrap or a broken clock.
pub const CLOCK_TOLERANCE: f64 = 0.25;

/// Marks channels of no group in [`Calibrator`]'s group table.
const NO_GROUP: u8 = u8::MAX;

/// The calibration stage: remap, clamp, smooth, normalise opted-in groups. One per input
/// stream. Every output weight is finite and in [0, 1]; every output rotation is finite and
/// unit length.
#[derive(Debug, Clone)]
pub struct Calibrator {
    /// Per-channel input ranges, canonical order.
    ranges: [ChannelRange; COUNT],
    /// The settings the filters were built from.
    smoothing: SmoothingConfig,
    /// Index into `smoothing.groups` per channel, or [`NO_GROUP`].
    group_of: [u8; COUNT],
    /// One filter per channel.
    filters: [Filter; COUNT],
    /// Head, left eye and right eye rotation filters.
    rotations: [RotationFilter; 3],
    /// The inverse of the head, left eye and right eye rest rotations (identity until a
    /// neutral is captured): incoming rotations are taken relative to the rest.
    rest_inverse: [Quat; 3],
    /// The masks of the groups to normalise.
    normalize: [ChannelMask; settings::MAX_GROUPS],
    /// How many of `normalize` are used.
    normalize_len: usize,
    /// The smoothed complete state (before normalisation).
    state: Option<FaceFrame>,
    /// When the previous frame was received.
    last_received: Option<Instant>,
    /// The previous frame's sender timestamp, when it had a finite one.
    last_sender: Option<f64>,
    /// Frames whose sender timestamp was distrusted.
    clock_fallbacks: u64,
}

impl Calibrator {
    /// A calibrator with identity ranges (a performer profile replaces them).
    pub fn new(smoothing: SmoothingConfig) -> Calibrator {
        let mut cal = Calibrator {
            ranges: [ChannelRange::default(); COUNT],
            smoothing,
            group_of: [NO_GROUP; COUNT],
            filters: [Filter::new(smoothing.weights); COUNT],
            rotations: [RotationFilter::new(smoothing.rotations); 3],
            rest_inverse: [Quat::IDENTITY; 3],
            normalize: [ChannelMask::EMPTY; settings::MAX_GROUPS],
            normalize_len: 0,
            state: None,
            last_received: None,
            last_sender: None,
            clock_fallbacks: 0,
        };
        cal.set_smoothing(smoothing);
        cal
    }

    /// Replaces the per-channel input ranges (canonical order).
    pub fn set_ranges(&mut self, ranges: [ChannelRange; COUNT]) {
        self.ranges = ranges;
    }

    /// The per-channel input ranges (canonical order).
    pub fn ranges(&self) -> &[ChannelRange; COUNT] {
        &self.ranges
    }

    /// Sets the rest rotations of the head, left eye and right eye (`None`: the sender's zero):
    /// from then on a rotation equal to its rest comes out as identity, so a performer whose
    /// phone sits off to one side still looks straight ahead. Non-finite or zero rotations
    /// count as `None`.
    pub fn set_rest(&mut self, rest: [Option<Quat>; 3]) {
        for (slot, q) in self.rest_inverse.iter_mut().zip(rest) {
            *slot = q
                .and_then(sane_rotation)
                .map_or(Quat::IDENTITY, |q| q.inverse());
        }
        for r in &mut self.rotations {
            r.reset();
        }
    }

    /// Takes `raw` (a frame as received, the performer at rest) as the neutral: each channel it
    /// carries gets its range's start moved to the value it reads now, so a face at rest shows
    /// no expression, and the head and eye rotations it carries become the rest rotations
    /// ([`Calibrator::set_rest`]). A channel already within [`NEUTRAL_HEADROOM`] of its range's
    /// end (the performer was not at rest there) keeps its range.
    pub fn capture_neutral(&mut self, raw: &FaceFrame) -> NeutralCapture {
        let mut capture = NeutralCapture {
            rezeroed: ChannelMask::EMPTY,
            kept: ChannelMask::EMPTY,
            ranges: self.ranges,
            rest: [None; 3],
        };
        for c in raw.present.iter() {
            let v = raw.weights[c.index()];
            let range = &mut capture.ranges[c.index()];
            if v.is_finite() && v < range.max - NEUTRAL_HEADROOM {
                range.min = v.max(0.0).min(range.max);
                capture.rezeroed.insert(c);
            } else {
                capture.kept.insert(c);
            }
        }
        let current = self.rest();
        for (i, q) in [raw.head, raw.left_eye, raw.right_eye]
            .into_iter()
            .enumerate()
        {
            capture.rest[i] = match q.and_then(sane_rotation) {
                Some(q) => Some(q),
                // Keep an earlier rest for a rotation this frame does not carry.
                None => (current[i] != Quat::IDENTITY).then_some(current[i]),
            };
        }
        self.set_ranges(capture.ranges);
        self.set_rest(capture.rest);
        capture
    }

    /// The rest rotations of the head, left eye and right eye (identity: none set).
    pub fn rest(&self) -> [Quat; 3] {
        self.rest_inverse.map(|q| q.inverse())
    }

    /// Replaces the smoothing settings and restarts the filters.
    pub fn set_smoothing(&mut self, smoothing: SmoothingConfig) {
        self.smoothing = smoothing;
        self.group_of = [NO_GROUP; COUNT];
        self.normalize_len = 0;
        for (gi, (_, group)) in smoothing.groups.iter().enumerate() {
            for c in group.channels.0.iter() {
                // The first group naming a channel wins; validation rejects overlaps anyway.
                if self.group_of[c.index()] == NO_GROUP {
                    self.group_of[c.index()] = gi as u8;
                }
            }
            if group.normalize {
                self.normalize[self.normalize_len] = group.channels.0;
                self.normalize_len += 1;
            }
        }
        let mut specs = [smoothing.weights; settings::MAX_GROUPS];
        for (slot, (_, g)) in specs.iter_mut().zip(smoothing.groups.iter()) {
            *slot = g.spec();
        }
        for (i, f) in self.filters.iter_mut().enumerate() {
            let spec = specs
                .get(self.group_of[i] as usize)
                .copied()
                .unwrap_or(smoothing.weights);
            *f = Filter::new(spec);
        }
        self.rotations = [RotationFilter::new(smoothing.rotations); 3];
    }

    /// The smoothing settings.
    pub fn smoothing(&self) -> &SmoothingConfig {
        &self.smoothing
    }

    /// Forgets the filter state, so the next frame is taken as it is.
    pub fn reset(&mut self) {
        self.state = None;
        self.restart_filters();
        self.last_received = None;
        self.last_sender = None;
    }

    fn restart_filters(&mut self) {
        for f in &mut self.filters {
            f.reset();
        }
        for r in &mut self.rotations {
            r.reset();
        }
    }

    /// How many frames so far had a sender timestamp that was not trusted (it went backwards,
    /// stood still, or jumped away from the receive clock), so receive time timed them.
    pub fn clock_fallbacks(&self) -> u64 {
        self.clock_fallbacks
    }

    /// The seconds between the previous frame and `raw`, from the configured clock, or `None`
    /// for the first frame.
    fn step_seconds(&mut self, raw: &FaceFrame) -> Option<f64> {
        let sender = raw.sender_time.filter(|s| s.is_finite());
        let prev_sender = std::mem::replace(&mut self.last_sender, sender);
        let prev_received = self.last_received.replace(raw.received)?;
        let received = raw
            .received
            .saturating_duration_since(prev_received)
            .as_secs_f64();
        if self.smoothing.clock == ClockSource::Receive || received > MAX_GAP.as_secs_f64() {
            return Some(received);
        }
        let (Some(now), Some(prev)) = (sender, prev_sender) else {
            return Some(received);
        };
        let step = now - prev;
        if step > 0.0 && step <= MAX_GAP.as_secs_f64() && (step - received).abs() <= CLOCK_TOLERANCE
        {
            Some(step)
        } else {
            self.clock_fallbacks += 1;
            trace!(
                step,
                received,
                "sender clock distrusted; using receive time"
            );
            Some(received)
        }
    }

    /// Conditions `raw` and returns the complete, calibrated state after it.
    pub fn apply(&mut self, raw: &FaceFrame) -> FaceFrame {
        let dt = self.step_seconds(raw);
        let restart = match dt {
            None => true,
            Some(dt) => dt > MAX_GAP.as_secs_f64(),
        };
        if restart {
            self.restart_filters();
        }
        let dt = dt.unwrap_or(0.0) as f32;
        let mut state = self.state.unwrap_or(FaceFrame {
            present: ChannelMask::EMPTY,
            head: None,
            left_eye: None,
            right_eye: None,
            ..*raw
        });
        for c in raw.present.iter() {
            let i = c.index();
            let target = self.ranges[i].apply(raw.weights[i]);
            state.weights[i] = self.filters[i].step(target, dt).clamp(0.0, 1.0);
        }
        state.present = state.present.union(raw.present);
        for ((slot, (filter, next)), rest_inverse) in
            [&mut state.head, &mut state.left_eye, &mut state.right_eye]
                .into_iter()
                .zip(
                    self.rotations
                        .iter_mut()
                        .zip([raw.head, raw.left_eye, raw.right_eye]),
                )
                .zip(self.rest_inverse)
        {
            if let Some(q) = next {
                let q = (rest_inverse * q).normalize();
                if let Some(out) = filter.step(q, dt) {
                    *slot = Some(out);
                }
            }
        }
        state.sender_time = raw
            .sender_time
            .filter(|s| s.is_finite())
            .or(state.sender_time);
        state.tracking = raw.tracking;
        state.received = raw.received;
        state.protocol = raw.protocol;
        state.from = raw.from;
        self.state = Some(state);
        let mut out = state;
        for mask in &self.normalize[..self.normalize_len] {
            normalize_group(&mut out, *mask);
        }
        sanitize(&mut out);
        out
    }

    /// The current smoothed state, if any frame arrived (before group normalisation).
    pub fn state(&self) -> Option<&FaceFrame> {
        self.state.as_ref()
    }

    /// Channels seen so far.
    pub fn seen(&self) -> ChannelMask {
        self.state.map(|s| s.present).unwrap_or_default()
    }
}

/// Scales the weights of `mask`'s present channels by `1 / max(1, sum)`.
pub fn normalize_group(frame: &mut FaceFrame, mask: ChannelMask) {
    let mut sum = 0.0f32;
    for c in mask.iter().filter(|c| frame.present.contains(*c)) {
        sum += frame.weights[c.index()];
    }
    if sum > 1.0 && sum.is_finite() {
        for c in mask.iter().filter(|c| frame.present.contains(*c)) {
            frame.weights[c.index()] /= sum;
        }
    }
}

/// Forces every weight finite and into [0, 1] (non-finite becomes 0) and every rotation finite
/// and unit length (a broken one becomes the identity). The last line of defence before a frame
/// leaves the stage.
pub fn sanitize(frame: &mut FaceFrame) {
    for w in &mut frame.weights {
        *w = if w.is_finite() {
            w.clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    for q in [&mut frame.head, &mut frame.left_eye, &mut frame.right_eye]
        .into_iter()
        .flatten()
    {
        *q = sane_rotation(*q).unwrap_or(Quat::IDENTITY);
    }
    if frame.sender_time.is_some_and(|s| !s.is_finite()) {
        frame.sender_time = None;
    }
}

/// The instant `seconds` after `base`, for tests and replays.
pub fn at(base: Instant, seconds: f64) -> Instant {
    base + Duration::from_secs_f64(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};

    fn raw(t: Instant, jaw: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t);
        f.set(Channel::JawOpen, jaw);
        f
    }

    #[test]
    fn range_remaps_and_clamps() {
        let r = ChannelRange { min: 0.2, max: 0.6 };
        assert_eq!(r.apply(0.2), 0.0);
        assert_eq!(r.apply(0.6), 1.0);
        assert!((r.apply(0.4) - 0.5).abs() < 1e-6);
        assert_eq!(r.apply(-3.0), 0.0);
        assert_eq!(r.apply(9.0), 1.0);
        let degenerate = ChannelRange { min: 0.5, max: 0.5 };
        assert_eq!(degenerate.apply(0.3), 0.3);
        assert_eq!(degenerate.apply(1.3), 1.0);
        assert_eq!(ChannelRange::default().apply(f32::NAN), 0.0);
    }

    #[test]
    fn first_frame_passes_and_values_are_clamped() {
        let t0 = Instant::now();
        let mut cal = Calibrator::new(SmoothingConfig::default());
        let out = cal.apply(&raw(t0, 1.4));
        assert_eq!(out.get(Channel::JawOpen), Some(1.0));
        assert_eq!(out.get(Channel::EyeBlinkLeft), None);
    }

    #[test]
    fn smoothing_is_frame_rate_independent() {
        let t0 = Instant::now();
        let cfg = SmoothingConfig::ema(0.1, 0.1);
        let run = |hz: f64| {
            let mut cal = Calibrator::new(cfg);
            cal.apply(&raw(t0, 0.0));
            let frames = (0.2 * hz).round() as usize;
            let mut last = 0.0;
            for i in 1..=frames {
                last = cal
                    .apply(&raw(at(t0, i as f64 / hz), 1.0))
                    .get(Channel::JawOpen)
                    .unwrap();
            }
            last
        };
        let (a, b) = (run(30.0), run(60.0));
        let expected = 1.0 - (-0.2f32 / 0.1).exp();
        assert!((a - expected).abs() < 1e-4, "{a} vs {expected}");
        assert!((b - expected).abs() < 1e-4, "{b} vs {expected}");
    }

    #[test]
    fn missing_channels_keep_their_last_value() {
        let t0 = Instant::now();
        let mut cal = Calibrator::new(SmoothingConfig::off());
        let mut first = raw(t0, 0.5);
        first.set(Channel::EyeBlinkLeft, 0.25);
        cal.apply(&first);
        let second = raw(at(t0, 0.016), 0.75);
        let out = cal.apply(&second);
        assert_eq!(out.get(Channel::JawOpen), Some(0.75));
        assert_eq!(out.get(Channel::EyeBlinkLeft), Some(0.25));
    }

    #[test]
    fn rotations_are_smoothed_and_kept() {
        let t0 = Instant::now();
        let mut cal = Calibrator::new(SmoothingConfig::default());
        let mut a = raw(t0, 0.0);
        a.head = Some(Quat::IDENTITY);
        cal.apply(&a);
        let mut b = raw(at(t0, 0.016), 0.0);
        b.head = Some(Quat::from_rotation_y(1.0));
        let out = cal.apply(&b);
        let angle = out.head.unwrap().angle_between(Quat::IDENTITY);
        assert!(angle > 0.0 && angle < 1.0, "{angle}");
        let c = raw(at(t0, 0.032), 0.0);
        assert!(cal.apply(&c).head.is_some());
    }

    #[test]
    fn captured_neutral_rezeroes_resting_channels_and_recentres_the_head() {
        use crate::arkit::{Channel, Protocol};
        let t0 = Instant::now();
        let mut cal = Calibrator::new(SmoothingConfig::off());
        let mut rest = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:1".parse().unwrap(), t0);
        rest.set(Channel::MouthSmileLeft, 0.2);
        rest.set(Channel::JawOpen, 0.98);
        let turned = Quat::from_rotation_y(0.3);
        rest.head = Some(turned);
        let capture = cal.capture_neutral(&rest);
        assert!(capture.rezeroed.contains(Channel::MouthSmileLeft));
        assert!(
            capture.kept.contains(Channel::JawOpen),
            "0.98 is no resting value"
        );
        assert_eq!(cal.ranges()[Channel::MouthSmileLeft.index()].min, 0.2);
        assert_eq!(
            cal.ranges()[Channel::JawOpen.index()],
            ChannelRange::default()
        );
        // The resting face now reads 0, and the turned head reads straight ahead.
        let out = cal.apply(&rest);
        assert_eq!(out.get(Channel::MouthSmileLeft), Some(0.0));
        assert!(out.head.unwrap().angle_between(Quat::IDENTITY) < 1e-4);
        // A smile from there still reaches 1, and a turn is taken relative to the rest.
        let mut moved = rest;
        moved.received = t0 + Duration::from_millis(16);
        moved.set(Channel::MouthSmileLeft, 1.0);
        moved.head = Some(Quat::from_rotation_y(0.5));
        let out = cal.apply(&moved);
        assert_eq!(out.get(Channel::MouthSmileLeft), Some(1.0));
        assert!((out.head.unwrap().angle_between(Quat::IDENTITY) - 0.2).abs() < 1e-4);
        // A frame without a head keeps the earlier rest; a NaN rotation is not a rest.
        let mut bare = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:1".parse().unwrap(), t0);
        bare.left_eye = Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
        let capture = cal.capture_neutral(&bare);
        assert!(capture.rest[0].unwrap().angle_between(turned) < 1e-5);
        assert_eq!(capture.rest[1], None);
    }
}
