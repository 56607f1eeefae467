//! One layer of the mixer: values in ARKit space, the regions it drives, how it blends, and a
//! weight that fades in and out.

use std::fmt;
use std::time::{Duration, Instant};

use glam::Quat;
use serde::Deserialize;

use super::region::RegionMask;
use crate::arkit::{Channel, ChannelMask, FaceFrame, Params, COUNT, VISEMES};

/// How a layer combines with what the layers below it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlendMode {
    /// Replaces what is below, by the layer's weight (`v + (x − v)·w`; rotations by slerp).
    #[default]
    Override,
    /// Adds to what is below (`v + x·w`; a rotation is applied on top of the one below).
    Add,
    /// Keeps the larger of the two (`max(v, x·w)`; of two rotations, the larger turn).
    Max,
}

impl BlendMode {
    /// The name used in `facewire.toml`.
    pub fn name(self) -> &'static str {
        match self {
            BlendMode::Override => "override",
            BlendMode::Add => "add",
            BlendMode::Max => "max",
        }
    }
}

impl fmt::Display for BlendMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a layer holds: ARKit channel values and, optionally, head and eye rotations. Values
/// are kept finite and in [0, 1] and rotations unit length whatever is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerValues {
    /// Channel values, canonical order; only those in `present` count.
    pub weights: [f32; COUNT],
    /// The channels the layer drives.
    pub present: ChannelMask,
    /// Head rotation.
    pub head: Option<Quat>,
    /// Left eye rotation.
    pub left_eye: Option<Quat>,
    /// Right eye rotation.
    pub right_eye: Option<Quat>,
    /// Viseme weights (lip sync), [`crate::arkit::Viseme::ALL`] order, for mappings that route
    /// visemes; they reach the frame where the layer's mask covers the mouth.
    pub visemes: Option<[f32; VISEMES]>,
    /// Values of parameters plugins created, for mappings that read them (`param:NAME`); the
    /// frame takes those of the topmost layer in the mix that has some.
    pub params: Option<Params>,
}

impl Default for LayerValues {
    fn default() -> LayerValues {
        LayerValues {
            weights: [0.0; COUNT],
            present: ChannelMask::EMPTY,
            head: None,
            left_eye: None,
            right_eye: None,
            visemes: None,
            params: None,
        }
    }
}

/// A weight forced finite and into [0, 1]; NaN becomes 0.
pub(crate) fn unit(v: f32) -> f32 {
    if v.is_finite() {
        v.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// A rotation made unit length, or `None` when it cannot be (non-finite, near zero length).
pub(crate) fn rotation(q: Option<Quat>) -> Option<Quat> {
    let q = q?;
    let len = q.length();
    if !q.is_finite() || len <= 1e-6 {
        return None;
    }
    // Already unit length within rounding: kept bit for bit.
    Some(if (len - 1.0).abs() <= 1e-6 {
        q
    } else {
        q / len
    })
}

impl LayerValues {
    /// The values of `frame` (its present channels and rotations), made safe.
    pub fn from_frame(frame: &FaceFrame) -> LayerValues {
        let mut v = LayerValues {
            present: frame.present,
            head: rotation(frame.head),
            left_eye: rotation(frame.left_eye),
            right_eye: rotation(frame.right_eye),
            ..LayerValues::default()
        };
        for c in frame.present.iter() {
            v.weights[c.index()] = unit(frame.weights[c.index()]);
        }
        v
    }

    /// Sets `channel` to `value` (made finite and clamped to [0, 1]).
    pub fn set(&mut self, channel: Channel, value: f32) {
        self.weights[channel.index()] = unit(value);
        self.present.insert(channel);
    }

    /// Sets the viseme weights (each made finite and clamped to [0, 1]).
    pub fn set_visemes(&mut self, weights: [f32; VISEMES]) {
        self.visemes = Some(weights.map(unit));
    }

    /// The value of `channel`, when the layer drives it.
    pub fn get(&self, channel: Channel) -> Option<f32> {
        self.present
            .contains(channel)
            .then(|| self.weights[channel.index()])
    }
}

/// A weight that moves towards 0 or 1 at a fixed rate, timed by the instants it is given (so a
/// paused clock pauses it). Shaped with smoothstep, so neither end of a fade pops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fade {
    /// Progress in [0, 1], linear in time.
    progress: f32,
    /// Whether it moves towards 1.
    on: bool,
    /// Time from 0 to 1.
    fade_in: Duration,
    /// Time from 1 to 0.
    fade_out: Duration,
    /// The instant of the last update.
    last: Option<Instant>,
}

impl Fade {
    /// A fade resting at 1 (`on`) or 0.
    pub fn new(on: bool, fade_in: Duration, fade_out: Duration) -> Fade {
        Fade {
            progress: if on { 1.0 } else { 0.0 },
            on,
            fade_in,
            fade_out,
            last: None,
        }
    }

    /// Starts moving towards 1 (`true`) or 0 from `now`.
    pub fn set(&mut self, on: bool, now: Instant) {
        self.advance(now);
        self.on = on;
    }

    /// Whether it moves (or rests) towards 1.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The fade-in and fade-out times.
    pub fn times(&self) -> (Duration, Duration) {
        (self.fade_in, self.fade_out)
    }

    /// Changes the fade times; the weight stays where it is.
    pub fn set_times(&mut self, fade_in: Duration, fade_out: Duration) {
        self.fade_in = fade_in;
        self.fade_out = fade_out;
    }

    /// Moves the weight by the time since the last update.
    pub fn advance(&mut self, now: Instant) {
        let dt = self
            .last
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f32());
        self.last = Some(self.last.map_or(now, |t| t.max(now)));
        let (target, span) = if self.on {
            (1.0, self.fade_in)
        } else {
            (0.0, self.fade_out)
        };
        if span.is_zero() {
            self.progress = target;
            return;
        }
        let step = dt / span.as_secs_f32();
        self.progress = if self.on {
            (self.progress + step).min(1.0)
        } else {
            (self.progress - step).max(0.0)
        };
    }

    /// The shaped weight in [0, 1].
    pub fn weight(&self) -> f32 {
        let s = self.progress.clamp(0.0, 1.0);
        s * s * (3.0 - 2.0 * s)
    }

    /// Whether the weight is still moving.
    pub fn moving(&self) -> bool {
        if self.on {
            self.progress < 1.0
        } else {
            self.progress > 0.0
        }
    }
}

/// One named layer of the mixer.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Its name, as in `[layers]`.
    pub name: String,
    /// The regions it drives; channels and rotations outside them are left to the layers below.
    pub mask: RegionMask,
    /// How it blends.
    pub mode: BlendMode,
    /// The most its weight reaches, in [0, 1].
    pub gain: f32,
    /// Its fading weight.
    pub fade: Fade,
    /// Its values.
    pub values: LayerValues,
    /// Whether it stands in for a lost face: its weight is scaled by how absent the tracked
    /// face is (0 while the phone tracks, 1 when the face is lost or no phone ever sent).
    pub when_lost: bool,
    /// The least that scaling leaves of a `when_lost` layer's weight, in [0, 1]: 0 (the
    /// default) lets it vanish under live tracking; above 0 it stays faintly on (idle life
    /// under tracking). Ignored unless `when_lost`.
    pub under_tracking: f32,
}

impl Layer {
    /// An empty layer, on (weight 1) or off.
    pub fn new(name: &str, mode: BlendMode, mask: RegionMask, fade: Fade) -> Layer {
        Layer {
            name: name.to_string(),
            mask,
            mode,
            gain: 1.0,
            fade,
            values: LayerValues::default(),
            when_lost: false,
            under_tracking: 0.0,
        }
    }

    /// The weight it blends with now.
    pub fn weight(&self) -> f32 {
        unit(self.gain) * self.fade.weight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::at;

    #[test]
    fn fades_follow_the_clock_they_are_given() {
        let t0 = Instant::now();
        let mut f = Fade::new(
            false,
            Duration::from_millis(200),
            Duration::from_millis(400),
        );
        f.advance(t0);
        f.set(true, t0);
        f.advance(at(t0, 0.1));
        assert!((f.weight() - 0.5).abs() < 1e-6, "{}", f.weight());
        assert!(f.moving());
        // Time that does not pass (a paused clock, the same instant again) moves nothing.
        f.advance(at(t0, 0.1));
        assert!((f.weight() - 0.5).abs() < 1e-6);
        // An earlier instant (a clock that jumped back) moves nothing either.
        f.advance(t0);
        assert!((f.weight() - 0.5).abs() < 1e-6);
        f.advance(at(t0, 0.3));
        assert_eq!(f.weight(), 1.0);
        assert!(!f.moving());
        f.set(false, at(t0, 0.3));
        f.advance(at(t0, 0.5));
        assert!((f.weight() - 0.5).abs() < 1e-6, "{}", f.weight());
        f.advance(at(t0, 0.9));
        assert_eq!(f.weight(), 0.0);
    }

    #[test]
    fn a_zero_fade_switches_at_once() {
        let t0 = Instant::now();
        let mut f = Fade::new(false, Duration::ZERO, Duration::ZERO);
        f.set(true, t0);
        f.advance(t0);
        assert_eq!(f.weight(), 1.0);
    }

    #[test]
    fn values_are_made_safe() {
        let mut v = LayerValues::default();
        v.set(Channel::JawOpen, f32::NAN);
        v.set(Channel::EyeBlinkLeft, 7.0);
        v.set(Channel::EyeBlinkRight, -1.0);
        assert_eq!(v.get(Channel::JawOpen), Some(0.0));
        assert_eq!(v.get(Channel::EyeBlinkLeft), Some(1.0));
        assert_eq!(v.get(Channel::EyeBlinkRight), Some(0.0));
        assert_eq!(v.get(Channel::MouthClose), None);
        assert_eq!(
            rotation(Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0))),
            None
        );
        assert_eq!(rotation(Some(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0))), None);
        let q = rotation(Some(Quat::from_xyzw(0.0, 0.0, 0.0, 2.0))).unwrap();
        assert!((q.length() - 1.0).abs() < 1e-6);
    }
}
