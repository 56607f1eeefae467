//! Idle life: blinks, breathing and glances for the face while the phone does not track it, a
//! layer of the mixer.
//!
//! [`Idle`] is pure and driven by the clock it is given: each call to [`Idle::values`] takes an
//! instant and returns the layer's values then, so it runs the same live, in a replay and in
//! tests on simulated time. Its randomness comes from a seeded generator of its own.
//!
//! The numbers follow the idle motion of the tools streamers know (Live2D's `CubismEyeBlink`
//! and `CubismBreath`, VSeeFace's breathing): a blink every 2 to 7 s that closes in 0.1 s,
//! stays closed 0.05 s and opens in 0.15 s, sometimes twice; a nod of under a degree with each
//! breath and a slower sway on periods that never line up (so no loop shows); the eyes glancing
//! a few degrees away every few seconds with quick saccades, and back.

use std::f64::consts::TAU;
use std::time::{Duration, Instant};

use glam::Quat;

mod section;

pub use section::IdleConfig;

use crate::arkit::Channel;
use crate::mixer::{BlendMode, Fade, Kit, Layer, LayerValues, Own, Region, RegionMask};

/// The name of the idle layer in the mixer (and in `[layers].order`, to place it).
pub use crate::mixer::LAYER_IDLE;

/// How long the layer takes to come in or go when `[idle]` is turned on or off by a reload
/// (tracking loss itself fades it as the face fades: see [`crate::mixer::Layer::when_lost`]).
const FADE: Duration = Duration::from_millis(500);

/// Seconds a blink takes to close the eyes.
pub const BLINK_CLOSING: f64 = 0.10;
/// Seconds the eyes stay closed.
pub const BLINK_CLOSED: f64 = 0.05;
/// Seconds a blink takes to open the eyes again.
pub const BLINK_OPENING: f64 = 0.15;
/// Seconds of a whole blink.
const BLINK: f64 = BLINK_CLOSING + BLINK_CLOSED + BLINK_OPENING;
/// Seconds the eyes are open between the two blinks of a double blink.
const DOUBLE_GAP: f64 = 0.12;

/// Seconds an eye jump (a saccade) takes.
const SACCADE: f64 = 0.05;
/// Seconds a glance away holds before the eyes come back.
const GLANCE_HOLD: [f64; 2] = [0.4, 1.5];
/// How far from the centre the eyes rest between glances, as a part of `gaze_degrees`.
const CENTRE_JITTER: f64 = 0.15;
/// Vertical glances are this much smaller than sideways ones (eyes wander sideways).
const VERTICAL: f64 = 0.6;

/// The eye turn, in degrees, that the eyeLook channels mean at 1 (a mapping's default
/// `[eyes]` ranges): sideways, up and down.
const LOOK_DEGREES: [f64; 3] = [25.0, 20.0, 25.0];

/// Seconds of the slow side-to-side sway (yaw) and of its tilt (roll); neither is a multiple
/// of the other or of a breath.
const SWAY_PERIODS: [f64; 2] = [7.3, 11.9];

/// After a gap this long (a paused run), the schedule restarts from now instead of replaying
/// every blink it missed.
const CATCH_UP: f64 = 60.0;

/// A tiny xorshift64* generator: plenty for when to blink, and the same sequence for a seed.
#[derive(Debug, Clone, Copy)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Spread the seed (splitmix64's finaliser); xorshift must not start at 0.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi] (`lo` when the range is empty or backwards).
    fn range(&mut self, [lo, hi]: [f64; 2]) -> f64 {
        lo + (hi - lo).max(0.0) * self.unit()
    }
}

/// Idle life at one instant, in plain numbers (degrees), for the layer and for tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleSample {
    /// How closed both eyes are, 0 (open) to 1.
    pub blink: f32,
    /// Where the eyes look, degrees: sideways (positive towards the performer's left) and up.
    pub gaze: [f32; 2],
    /// The head's turn, degrees: pitch (the breath's nod), yaw and roll (the sway).
    pub head: [f32; 3],
}

/// Where the eyes are going.
#[derive(Debug, Clone, Copy)]
struct Gaze {
    /// Where the last jump started, degrees.
    from: [f64; 2],
    /// Where it goes, degrees.
    to: [f64; 2],
    /// When it started, seconds.
    moved_at: f64,
    /// When the next jump starts.
    next_at: f64,
    /// Whether the eyes are glancing away (the next jump brings them back).
    away: bool,
}

/// The idle-life generator. See the module documentation.
#[derive(Debug, Clone)]
pub struct Idle {
    settings: IdleConfig,
    rng: Rng,
    /// The first instant given: time zero.
    start: Option<Instant>,
    /// The latest time given, seconds since `start` (time never runs backwards here).
    t: f64,
    /// When the next (or current) blink starts.
    blink_at: f64,
    /// Whether the next (or current) blink is the second of a double blink.
    second: bool,
    gaze: Gaze,
    /// The phases of the breath, the sway and the tilt, radians, so two runs differ.
    phases: [f64; 3],
}

impl Idle {
    /// A generator with `settings` whose randomness follows `seed`; its time starts at the
    /// first instant it is given.
    pub fn new(settings: IdleConfig, seed: u64) -> Idle {
        let mut rng = Rng::new(seed);
        let blink_at = rng.range(blink_interval(settings.blink_interval));
        let next_at = rng.range(interval(settings.gaze_interval, SACCADE));
        let phases = [rng.unit() * TAU, rng.unit() * TAU, rng.unit() * TAU];
        Idle {
            settings,
            rng,
            start: None,
            t: 0.0,
            blink_at,
            second: false,
            gaze: Gaze {
                from: [0.0; 2],
                to: [0.0; 2],
                moved_at: 0.0,
                next_at,
                away: false,
            },
            phases,
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> IdleConfig {
        self.settings
    }

    /// New settings (a reloaded configuration); the motion carries on from where it is, the
    /// new intervals from the next blink and glance on.
    pub fn set_settings(&mut self, settings: IdleConfig) {
        self.settings = settings;
    }

    /// Idle life at `now` (an instant earlier than one already given counts as that one).
    pub fn sample(&mut self, now: Instant) -> IdleSample {
        let start = *self.start.get_or_insert(now);
        let t = now
            .saturating_duration_since(start)
            .as_secs_f64()
            .max(self.t);
        if t - self.t > CATCH_UP {
            // A long pause: start the schedule afresh rather than replay what was missed.
            self.blink_at = t + self.rng.range(blink_interval(self.settings.blink_interval));
            self.gaze.next_at = t;
        }
        self.t = t;
        IdleSample {
            blink: self.blink(t) as f32,
            gaze: self.gaze(t).map(|v| v as f32),
            head: self.head(t).map(|v| v as f32),
        }
    }

    /// The idle layer's values at `now`: both eyes' blink, the eyeLook channels and eye
    /// rotations of the gaze, and the head's rotation.
    pub fn values(&mut self, now: Instant) -> LayerValues {
        values_of(&self.sample(now))
    }

    /// How closed the eyes are at `t`, moving the blink schedule on as blinks end.
    fn blink(&mut self, t: f64) -> f64 {
        loop {
            let s = t - self.blink_at;
            if s < 0.0 {
                return 0.0;
            }
            if s < BLINK {
                return blink_shape(s);
            }
            // This blink is over: the next starts a moment after it (the second of a double
            // blink, never a third) or an interval after its start.
            let double = !self.second && self.rng.unit() < f64::from(self.settings.double_blink);
            self.second = double;
            self.blink_at += if double {
                BLINK + DOUBLE_GAP
            } else {
                self.rng.range(blink_interval(self.settings.blink_interval))
            };
        }
    }

    /// Where the eyes look at `t`, degrees, moving the glances on as they come due.
    fn gaze(&mut self, t: f64) -> [f64; 2] {
        while t >= self.gaze.next_at {
            let g = self.gaze;
            let here = saccade(&g, g.next_at);
            let reach = f64::from(self.settings.gaze_degrees);
            let (to, hold, away) = if g.away {
                // Back to (near) the centre, resting there a while.
                let to = self.point(reach * CENTRE_JITTER);
                let hold = self
                    .rng
                    .range(interval(self.settings.gaze_interval, SACCADE));
                (to, hold, false)
            } else {
                let r = reach * (0.5 + 0.5 * self.rng.unit());
                let to = self.direction(r);
                (to, self.rng.range(GLANCE_HOLD), true)
            };
            self.gaze = Gaze {
                from: here,
                to,
                moved_at: g.next_at,
                next_at: g.next_at + SACCADE + hold,
                away,
            };
        }
        saccade(&self.gaze, t)
    }

    /// A random point within `radius` degrees of the centre (vertical squashed).
    fn point(&mut self, radius: f64) -> [f64; 2] {
        let r = radius * self.rng.unit().sqrt();
        self.direction(r)
    }

    /// A random direction at `r` degrees from the centre (vertical squashed).
    fn direction(&mut self, r: f64) -> [f64; 2] {
        let a = self.rng.unit() * TAU;
        [r * a.cos(), r * a.sin() * VERTICAL]
    }

    /// The head's pitch, yaw and roll at `t`, degrees: a nod with each breath, a slow sway.
    fn head(&self, t: f64) -> [f64; 3] {
        let s = &self.settings;
        let breath = f64::from(s.breathing_degrees)
            * (TAU * f64::from(s.breathing_rate) * t + self.phases[0]).sin();
        let sway = f64::from(s.sway_degrees);
        let yaw = sway * (TAU * t / SWAY_PERIODS[0] + self.phases[1]).sin();
        let roll = 0.5 * sway * (TAU * t / SWAY_PERIODS[1] + self.phases[2]).sin();
        [breath, yaw, roll]
    }
}

/// A `[lo, hi]` interval in seconds from the settings, kept sane whatever it holds: at least
/// `floor`, `hi` no less than `lo`.
fn interval([lo, hi]: [f32; 2], floor: f64) -> [f64; 2] {
    let sane = |v: f32| {
        if v.is_finite() {
            f64::from(v).max(floor)
        } else {
            4.0
        }
    };
    let (lo, hi) = (sane(lo), sane(hi));
    [lo, hi.max(lo)]
}

/// The time between blinks: never less than a blink and a double's gap, so blinks never overlap.
fn blink_interval(setting: [f32; 2]) -> [f64; 2] {
    interval(setting, BLINK + DOUBLE_GAP)
}

/// How closed the eyes are `s` seconds into a blink: linear closing, closed, linear opening.
fn blink_shape(s: f64) -> f64 {
    if s < BLINK_CLOSING {
        s / BLINK_CLOSING
    } else if s < BLINK_CLOSING + BLINK_CLOSED {
        1.0
    } else {
        (1.0 - (s - BLINK_CLOSING - BLINK_CLOSED) / BLINK_OPENING).clamp(0.0, 1.0)
    }
}

/// Where a jump has brought the eyes at `t` (eased, so it starts and lands gently).
fn saccade(g: &Gaze, t: f64) -> [f64; 2] {
    let p = ((t - g.moved_at) / SACCADE).clamp(0.0, 1.0);
    let p = p * p * (3.0 - 2.0 * p);
    [
        g.from[0] + (g.to[0] - g.from[0]) * p,
        g.from[1] + (g.to[1] - g.from[1]) * p,
    ]
}

/// The layer's values for a sample.
pub fn values_of(sample: &IdleSample) -> LayerValues {
    use Channel::*;
    let mut v = LayerValues::default();
    v.set(EyeBlinkLeft, sample.blink);
    v.set(EyeBlinkRight, sample.blink);
    let [x, y] = sample.gaze.map(f64::from);
    let [side, up, down] = LOOK_DEGREES;
    // Looking towards the performer's left turns the left eye out and the right eye in.
    let left = (x.max(0.0) / side) as f32;
    let right = ((-x).max(0.0) / side) as f32;
    v.set(EyeLookOutLeft, left);
    v.set(EyeLookInRight, left);
    v.set(EyeLookInLeft, right);
    v.set(EyeLookOutRight, right);
    let (look_up, look_down) = ((y.max(0.0) / up) as f32, ((-y).max(0.0) / down) as f32);
    v.set(EyeLookUpLeft, look_up);
    v.set(EyeLookUpRight, look_up);
    v.set(EyeLookDownLeft, look_down);
    v.set(EyeLookDownRight, look_down);
    // The same turn as the mapping makes of those channels: +Y turns towards the performer's
    // left, looking up is a negative turn about +X.
    let eye = Quat::from_rotation_y(x.to_radians() as f32)
        * Quat::from_rotation_x(-y.to_radians() as f32);
    v.left_eye = Some(eye);
    v.right_eye = Some(eye);
    let [pitch, yaw, roll] = sample.head.map(f32::to_radians);
    v.head = Some(
        Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch) * Quat::from_rotation_z(roll),
    );
    v
}

/// `values` as they go on top of a face tracked `tracked` (0 to 1): the phone's own blinks and
/// glances are the performer's, so idle blinks and glances fade out as the face is tracked and
/// only breathing and sway stay (what `under_tracking` keeps).
pub fn under_tracking(mut values: LayerValues, tracked: f32) -> LayerValues {
    let keep = (1.0 - tracked).clamp(0.0, 1.0);
    if keep >= 1.0 {
        return values;
    }
    let eyes = RegionMask::of(&[Region::Eyes, Region::Gaze]).channels();
    for c in eyes.iter() {
        values.weights[c.index()] *= keep;
    }
    for eye in [&mut values.left_eye, &mut values.right_eye] {
        *eye = eye.map(|q| Quat::IDENTITY.slerp(q, keep));
    }
    values
}

/// The idle layer: it adds to the face below it (the rest pose once the face is lost) on the
/// eyes, the gaze and the head, weighted by how absent the face is, and keeps `under_tracking`
/// (0 to 1) of its weight under live tracking. Its values come from [`Idle::values`] each tick.
pub fn layer(under_tracking: f32) -> Layer {
    let mask = RegionMask::of(&[Region::Eyes, Region::Gaze, Region::HeadPose]);
    let mut layer = Layer::new(
        LAYER_IDLE,
        BlendMode::Add,
        mask,
        Fade::new(true, FADE, FADE),
    );
    layer.when_lost = true;
    layer.under_tracking = under_tracking;
    layer
}

/// Idle life as a source of the mixer: one layer (see [`layer`]) whose values move on every
/// tick while it has weight.
#[derive(Debug, Default)]
pub struct IdleSource {
    /// The generator, while idle life is on or still fading out.
    idle: Option<Idle>,
    /// Whether `[idle]` is on.
    enabled: bool,
}

impl IdleSource {
    /// Off until [`IdleSource::configure`] switches it on.
    pub fn new() -> IdleSource {
        IdleSource::default()
    }

    /// Takes `[idle]` (`settings`; a new generator is seeded with `seed`): switched off, it animates on while its layer fades out; the motion carries on
    /// through new settings. Returns its layer, off while `[idle]` is off.
    pub fn configure(&mut self, settings: IdleConfig, seed: u64) -> Layer {
        let (enabled, under_tracking) = (settings.enabled, settings.under_tracking);
        self.enabled = enabled;
        if enabled {
            match self.idle.as_mut() {
                Some(idle) => idle.set_settings(settings),
                None => self.idle = Some(Idle::new(settings, seed)),
            }
        }
        let mut layer = layer(under_tracking);
        if !enabled {
            let (fade_in, fade_out) = layer.fade.times();
            layer.fade = Fade::new(false, fade_in, fade_out);
        }
        layer
    }

    /// Moves idle life on to `now`. Its layer takes the new values while it has weight (the
    /// face is lost, or `under_tracking` keeps it on); under full tracking it is emptied once,
    /// so the phone's frames pass as they did without it and nothing is mixed for it.
    pub fn advance<K: Kit>(&mut self, now: Instant, own: &mut Own<'_, K>) {
        let Some(idle) = self.idle.as_mut() else {
            return;
        };
        let values = under_tracking(idle.values(now), own.tracked());
        let Some(layer) = own.layers().first() else {
            return;
        };
        let showing = layer.fade.moving() || own.weight(0) > 0.0;
        if !showing && !self.enabled {
            // Switched off and faded out.
            self.idle = None;
            return;
        }
        let empty = layer.values.present.is_empty();
        if showing {
            if let Some(layer) = own.layer_mut(0) {
                layer.values = values;
            }
        } else if !empty {
            if let Some(layer) = own.layer_mut(0) {
                layer.values = LayerValues::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::at;

    /// `seconds` of idle life sampled every millisecond: (time, sample).
    fn run(settings: IdleConfig, seed: u64, seconds: f64) -> Vec<(f64, IdleSample)> {
        let t0 = Instant::now();
        let mut idle = Idle::new(settings, seed);
        (0..=(seconds * 1000.0) as u32)
            .map(|i| {
                let t = f64::from(i) / 1000.0;
                (t, idle.sample(at(t0, t)))
            })
            .collect()
    }

    /// Each blink's start, end, time closing (from open to fully closed), time closed and time
    /// opening, seconds, as the samples show them.
    fn blinks(samples: &[(f64, IdleSample)]) -> Vec<[f64; 5]> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < samples.len() {
            if samples[i].1.blink == 0.0 {
                i += 1;
                continue;
            }
            let start = samples[i - 1].0;
            let mut j = i;
            while j < samples.len() && samples[j].1.blink > 0.0 {
                j += 1;
            }
            if j == samples.len() {
                break;
            }
            let end = samples[j].0;
            let closed: Vec<f64> = samples[i..j]
                .iter()
                .filter(|(_, s)| s.blink == 1.0)
                .map(|(t, _)| *t)
                .collect();
            let (first, last) = (closed[0], *closed.last().unwrap());
            out.push([start, end, first - start, last - first, end - last]);
            i = j;
        }
        out
    }

    fn single_blinks() -> IdleConfig {
        IdleConfig {
            double_blink: 0.0,
            ..IdleConfig::default()
        }
    }

    #[test]
    fn blinks_come_every_two_to_seven_seconds_and_take_three_tenths() {
        let mut intervals = Vec::new();
        for seed in 0..5 {
            let samples = run(single_blinks(), seed, 60.0);
            let found = blinks(&samples);
            assert!(
                found.len() >= 8,
                "seed {seed}: {} blinks in a minute",
                found.len()
            );
            for b in &found {
                let [_, _, closing, closed, opening] = *b;
                assert!((closing - BLINK_CLOSING).abs() < 0.003, "closing {closing}");
                assert!((closed - BLINK_CLOSED).abs() < 0.003, "closed {closed}");
                assert!((opening - BLINK_OPENING).abs() < 0.003, "opening {opening}");
            }
            intervals.extend(found.windows(2).map(|w| w[1][0] - w[0][0]));
        }
        for &gap in &intervals {
            assert!((1.998..=7.002).contains(&gap), "an interval of {gap} s");
        }
        let mean = intervals.iter().sum::<f64>() / intervals.len() as f64;
        assert!((3.8..=5.2).contains(&mean), "mean interval {mean} s");
        let short = intervals.iter().filter(|&&g| g < 3.5).count();
        let long = intervals.iter().filter(|&&g| g > 5.5).count();
        assert!(short > 3 && long > 3, "spread: {short} short, {long} long");
    }

    #[test]
    fn a_double_blink_follows_at_once() {
        let always = IdleConfig {
            double_blink: 1.0,
            ..IdleConfig::default()
        };
        let found = blinks(&run(always, 7, 60.0));
        let gaps: Vec<f64> = found.windows(2).map(|w| w[1][0] - w[0][0]).collect();
        // Pairs: a short gap (the double), then an ordinary interval; never three in a row.
        for pair in gaps.chunks(2) {
            assert!((pair[0] - (BLINK + DOUBLE_GAP)).abs() < 0.003, "{gaps:?}");
            if let Some(&next) = pair.get(1) {
                assert!((1.998..=7.002).contains(&next), "{gaps:?}");
            }
        }
        // By default, now and then.
        let mut doubles = 0;
        for seed in 0..10 {
            let found = blinks(&run(IdleConfig::default(), seed, 60.0));
            doubles += found.windows(2).filter(|w| w[1][0] - w[0][0] < 1.0).count();
        }
        assert!(
            (1..=40).contains(&doubles),
            "{doubles} doubles in ten minutes"
        );
    }

    #[test]
    fn breathing_nods_within_its_amplitude_smoothly() {
        let settings = IdleConfig {
            breathing_degrees: 0.8,
            breathing_rate: 0.3,
            ..IdleConfig::default()
        };
        let samples = run(settings, 3, 60.0);
        let pitch: Vec<f32> = samples.iter().map(|(_, s)| s.head[0]).collect();
        let hi = pitch.iter().copied().fold(0.0f32, |m, p| m.max(p.abs()));
        assert!(hi <= 0.8 + 1e-4 && hi > 0.79, "{hi}");
        // Smooth: no step bigger than the sine's steepest slope allows over a millisecond, and
        // the slope itself changes gently (no kinks).
        let slope = 0.8 * std::f32::consts::TAU * 0.3 / 1000.0;
        for w in pitch.windows(3) {
            assert!((w[1] - w[0]).abs() <= slope * 1.01, "{w:?}");
            assert!((w[2] - 2.0 * w[1] + w[0]).abs() < 1e-4, "{w:?}");
        }
        // About 0.3 breaths a second: 18 rising zero crossings in a minute, give or take one.
        let rising = pitch
            .windows(2)
            .filter(|w| w[0] < 0.0 && w[1] >= 0.0)
            .count();
        assert!((17..=19).contains(&rising), "{rising}");
        // The sway stays within its own amplitude, its tilt within half.
        let sway = IdleConfig::default().sway_degrees;
        for (_, s) in &samples {
            assert!(s.head[1].abs() <= sway + 1e-4 && s.head[2].abs() <= sway / 2.0 + 1e-4);
        }
        let yaw = samples
            .iter()
            .fold(0.0f32, |m, (_, s)| m.max(s.head[1].abs()));
        assert!(yaw > sway * 0.9, "the sway shows: {yaw}");
    }

    #[test]
    fn glances_stay_within_their_reach_and_come_back() {
        let settings = IdleConfig {
            gaze_degrees: 5.0,
            ..IdleConfig::default()
        };
        let samples = run(settings, 11, 60.0);
        let radius = |s: &IdleSample| s.gaze[0].hypot(s.gaze[1]);
        assert!(samples.iter().all(|(_, s)| radius(s) <= 5.0 + 1e-4));
        // Count glances: out beyond half the reach, then back within the centre's jitter.
        let (mut glances, mut out) = (0, false);
        for (_, s) in &samples {
            let r = radius(s);
            if !out && r > 2.5 {
                out = true;
            } else if out && r <= 5.0 * CENTRE_JITTER as f32 + 1e-4 {
                out = false;
                glances += 1;
            }
        }
        assert!((8..=30).contains(&glances), "{glances} glances in a minute");
        // Saccades are quick: the eyes are still but for jumps of 50 ms, two per glance.
        let (mut jumps, mut run_ms, mut longest) = (0, 0, 0);
        for w in samples.windows(2) {
            if w[0].1.gaze != w[1].1.gaze {
                run_ms += 1;
                longest = longest.max(run_ms);
            } else if run_ms > 0 {
                jumps += 1;
                run_ms = 0;
            }
        }
        assert!(longest <= 51, "a jump of {longest} ms");
        assert!(
            jumps >= 2 * glances && jumps <= 2 * glances + 12,
            "{jumps} jumps"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_life() {
        let a = run(IdleConfig::default(), 42, 10.0);
        let b = run(IdleConfig::default(), 42, 10.0);
        let c = run(IdleConfig::default(), 43, 10.0);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn nothing_unsafe_comes_out_whatever_the_settings_or_the_clock() {
        let junk = IdleConfig {
            blink_interval: [f32::NAN, -3.0],
            double_blink: f32::INFINITY,
            breathing_degrees: 2.0,
            breathing_rate: 1.0,
            sway_degrees: 3.0,
            gaze_degrees: 20.0,
            gaze_interval: [0.0, f32::NAN],
            ..IdleConfig::default()
        };
        let t0 = Instant::now();
        for settings in [junk, IdleConfig::default()] {
            let mut idle = Idle::new(settings, 1);
            // Ticks, an instant from the past, then a jump of an hour (a paused run).
            for t in [0.0, 0.01, 5.0, 1.0, 3600.0, 3600.01, 3610.0] {
                let v = idle.values(at(t0, t));
                assert!(v
                    .weights
                    .iter()
                    .all(|w| w.is_finite() && (0.0..=1.0).contains(w)));
                for q in [v.head, v.left_eye, v.right_eye] {
                    let q = q.unwrap();
                    assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-4);
                }
            }
        }
    }

    #[test]
    fn a_glance_to_the_left_turns_both_eyes_and_their_channels_alike() {
        use Channel::*;
        let v = values_of(&IdleSample {
            blink: 0.5,
            gaze: [5.0, 2.0],
            head: [0.0; 3],
        });
        assert_eq!(v.get(EyeBlinkLeft), Some(0.5));
        assert_eq!(v.get(EyeBlinkRight), Some(0.5));
        assert!((v.get(EyeLookOutLeft).unwrap() - 0.2).abs() < 1e-6);
        assert!((v.get(EyeLookInRight).unwrap() - 0.2).abs() < 1e-6);
        assert_eq!(v.get(EyeLookInLeft), Some(0.0));
        assert!((v.get(EyeLookUpLeft).unwrap() - 0.1).abs() < 1e-6);
        assert_eq!(v.get(EyeLookDownRight), Some(0.0));
        // The eye turns towards +X (the performer's left) and up (+Y).
        let look = v.left_eye.unwrap() * glam::Vec3::Z;
        assert!(look.x > 0.08 && look.y > 0.03, "{look}");
        assert_eq!(v.left_eye, v.right_eye);
    }

    #[test]
    fn under_a_tracked_face_only_breathing_and_sway_stay() {
        let sample = IdleSample {
            blink: 0.8,
            gaze: [4.0, 2.0],
            head: [0.5, 0.8, 0.2],
        };
        let all = values_of(&sample);
        assert_eq!(
            under_tracking(all, 0.0),
            all,
            "a lost face keeps everything"
        );
        let tracked = under_tracking(all, 1.0);
        assert_eq!(tracked.get(Channel::EyeBlinkLeft), Some(0.0));
        assert_eq!(tracked.get(Channel::EyeLookOutLeft), Some(0.0));
        assert!(tracked.left_eye.unwrap().angle_between(Quat::IDENTITY) < 1e-6);
        assert_eq!(tracked.head, all.head, "breathing and sway stay");
        let half = under_tracking(all, 0.5);
        assert!((half.get(Channel::EyeBlinkLeft).unwrap() - 0.4).abs() < 1e-6);
    }
}
