//! Per-frame conditioning in ARKit space: per-performer range remap, clamp to [0, 1] and
//! frame-rate independent exponential smoothing. Pure functions over frames; no I/O.
//!
//! The stage turns the partial frames decoders commit into complete states: a channel the
//! sender left out of a frame keeps its last value, so the newest state alone describes the face
//! and the hand-off to the renderer may skip states safely.

use std::time::{Duration, Instant};

use glam::Quat;
use serde::Deserialize;

use crate::arkit::{ChannelMask, FaceFrame, COUNT};

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

/// Smoothing settings, in seconds rather than per-frame factors so that they mean the same at
/// 30 Hz and 60 Hz.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmoothingConfig {
    /// Time constant of the exponential filter on blendshape weights, in seconds (0 = off).
    pub weights: f32,
    /// Time constant of the exponential filter on head and eye rotations, in seconds (0 = off).
    pub rotations: f32,
}

impl Default for SmoothingConfig {
    fn default() -> Self {
        SmoothingConfig {
            weights: 0.03,
            rotations: 0.05,
        }
    }
}

/// The blend factor of an exponential filter with time constant `tau` after `dt`:
/// `1 - exp(-dt / tau)`. Applying it twice over `dt/2` equals applying it once over `dt`.
pub fn smoothing_alpha(dt: Duration, tau: f32) -> f32 {
    if tau <= 0.0 || !tau.is_finite() {
        return 1.0;
    }
    1.0 - (-dt.as_secs_f32() / tau).exp()
}

/// The longest gap treated as continuous motion; after a longer silence the filter restarts.
const MAX_GAP: Duration = Duration::from_millis(500);

/// The calibration stage: remap, clamp, smooth. One per input stream.
#[derive(Debug, Clone)]
pub struct Calibrator {
    ranges: [ChannelRange; COUNT],
    smoothing: SmoothingConfig,
    state: Option<FaceFrame>,
}

impl Calibrator {
    /// A calibrator with identity ranges (a performer profile replaces them).
    pub fn new(smoothing: SmoothingConfig) -> Calibrator {
        Calibrator {
            ranges: [ChannelRange::default(); COUNT],
            smoothing,
            state: None,
        }
    }

    /// Replaces the per-channel input ranges (canonical order).
    pub fn set_ranges(&mut self, ranges: [ChannelRange; COUNT]) {
        self.ranges = ranges;
    }

    /// Replaces the smoothing settings.
    pub fn set_smoothing(&mut self, smoothing: SmoothingConfig) {
        self.smoothing = smoothing;
    }

    /// Forgets the filter state, so the next frame is taken as it is.
    pub fn reset(&mut self) {
        self.state = None;
    }

    /// Conditions `raw` and returns the complete, calibrated state after it.
    pub fn apply(&mut self, raw: &FaceFrame) -> FaceFrame {
        let mut target = *raw;
        for c in raw.present.iter() {
            let i = c.index();
            target.weights[i] = self.ranges[i].apply(raw.weights[i]);
        }
        let Some(prev) = self.state.as_mut() else {
            self.state = Some(target);
            return target;
        };
        let dt = raw.received.saturating_duration_since(prev.received);
        let (aw, ar) = if dt > MAX_GAP {
            (1.0, 1.0)
        } else {
            (
                smoothing_alpha(dt, self.smoothing.weights),
                smoothing_alpha(dt, self.smoothing.rotations),
            )
        };
        for c in raw.present.iter() {
            let i = c.index();
            let was = if prev.present.contains(c) {
                prev.weights[i]
            } else {
                target.weights[i]
            };
            prev.weights[i] = was + aw * (target.weights[i] - was);
        }
        prev.present = prev.present.union(raw.present);
        prev.head = smooth_rotation(prev.head, raw.head, ar);
        prev.left_eye = smooth_rotation(prev.left_eye, raw.left_eye, ar);
        prev.right_eye = smooth_rotation(prev.right_eye, raw.right_eye, ar);
        prev.sender_time = raw.sender_time.or(prev.sender_time);
        prev.tracking = raw.tracking;
        prev.received = raw.received;
        prev.protocol = raw.protocol;
        prev.from = raw.from;
        *prev
    }

    /// The current calibrated state, if any frame arrived.
    pub fn state(&self) -> Option<&FaceFrame> {
        self.state.as_ref()
    }

    /// Channels seen so far.
    pub fn seen(&self) -> ChannelMask {
        self.state.map(|s| s.present).unwrap_or_default()
    }
}

fn smooth_rotation(prev: Option<Quat>, next: Option<Quat>, alpha: f32) -> Option<Quat> {
    match (prev, next) {
        (Some(p), Some(n)) => Some(p.slerp(n, alpha).normalize()),
        (p, None) => p,
        (None, n) => n,
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
        let cfg = SmoothingConfig {
            weights: 0.1,
            rotations: 0.1,
        };
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
        let mut cal = Calibrator::new(SmoothingConfig {
            weights: 0.0,
            rotations: 0.0,
        });
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
}
