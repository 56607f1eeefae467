//! The tracking-loss state machine and the [`Conditioner`] that runs frames through calibration
//! and it (the live chain in `session/` drives it on the ingest thread).
//!
//! ```text
//! Tracking ──(silence | frozen frames | sender says lost)──▶ Stale ─▶ Hold ──hold──▶ Fade
//!    ▲                                                                 │            │ fade
//!    └──ease_in── Reacquire ◀──(a live frame)── Hold | Fade | Neutral ◀─┴────────────┘
//! ```
//!
//! Stale is reported at the instant the loss is established, with its [`LossReason`], and the
//! machine enters Hold at that same instant: Stale marks the event, Hold is the period. Times
//! are measured from when the loss became true (the last frame plus `stale_after`, or the last
//! change plus `frozen_after`), not from when a tick noticed it, so the sequence does not depend
//! on tick granularity.

use std::time::{Duration, Instant};

use glam::Quat;
use serde::Serialize;
use tracing::info;

use super::settings::{SmoothingConfig, TrackingConfig};
use super::{sanitize, Calibrator, ChannelRange};
use crate::arkit::{ChannelMask, FaceFrame, TrackingFlag, COUNT};

/// The shortest interval between two frames the conditioner makes up on its own (while holding,
/// fading or easing in), about one 60 Hz display frame.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// Most state changes one call can report (Stale, Hold, Fade, Neutral, Reacquire, Tracking).
const MAX_CHANGES: usize = 6;

/// Where the face is in the tracking-loss sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackingState {
    /// Live frames drive the avatar.
    Tracking,
    /// The face was just found lost (reported once, at the instant of detection).
    Stale,
    /// The last live pose is held.
    Hold,
    /// The pose fades to neutral.
    Fade,
    /// The neutral pose is shown; also the state before the first frame.
    Neutral,
    /// Live frames are back; the pose eases from what was shown to them.
    Reacquire,
}

impl TrackingState {
    /// The lowercase name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            TrackingState::Tracking => "tracking",
            TrackingState::Stale => "stale",
            TrackingState::Hold => "hold",
            TrackingState::Fade => "fade",
            TrackingState::Neutral => "neutral",
            TrackingState::Reacquire => "reacquire",
        }
    }
}

impl std::fmt::Display for TrackingState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the face counts as lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// No frame for `stale_after`.
    Silence,
    /// Frames kept repeating the same values for `frozen_after`.
    Frozen,
    /// The sender flagged the face as lost.
    SenderLost,
}

/// The pose the avatar fades to: all weights 0 and rotations identity by default; a performer's
/// neutral can replace it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NeutralPose {
    /// Weights, canonical order.
    pub weights: [f32; COUNT],
    /// Head rotation.
    pub head: Quat,
    /// Left eye rotation.
    pub left_eye: Quat,
    /// Right eye rotation.
    pub right_eye: Quat,
}

impl Default for NeutralPose {
    fn default() -> NeutralPose {
        NeutralPose {
            weights: [0.0; COUNT],
            head: Quat::IDENTITY,
            left_eye: Quat::IDENTITY,
            right_eye: Quat::IDENTITY,
        }
    }
}

/// What one call produced: at most one frame for the renderer and the state changes, in order.
///
/// The frame is the tracking layer over the neutral pose: `layer` holds the layer's values (the
/// live frame, the held pose while the face is lost, or the ease from what was shown back to
/// live) and its weight (1, falling to 0 through the fade). `frame` is those values over the
/// neutral by that weight, computed as the mixer's override does, so the live chain can hand
/// the layer to the mixer instead and show the same frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    /// The complete, calibrated frame to show, if there is a new one.
    pub frame: Option<FaceFrame>,
    /// The tracking layer `frame` is made of: its values and weight over the neutral pose.
    pub layer: Option<(FaceFrame, f32)>,
    /// Why the face was lost, when this call reported [`TrackingState::Stale`].
    pub reason: Option<LossReason>,
    /// State changes; the first `changes` are used.
    states: [TrackingState; MAX_CHANGES],
    /// How many state changes.
    changes: usize,
}

impl Output {
    fn none() -> Output {
        Output {
            frame: None,
            layer: None,
            reason: None,
            states: [TrackingState::Tracking; MAX_CHANGES],
            changes: 0,
        }
    }

    /// The states entered during this call, in order.
    pub fn states(&self) -> &[TrackingState] {
        &self.states[..self.changes]
    }

    fn push(&mut self, state: TrackingState) {
        if self.changes < MAX_CHANGES {
            self.states[self.changes] = state;
            self.changes += 1;
        }
    }
}

/// The last raw value of every channel and rotation, to tell repeated frames from live ones.
#[derive(Debug, Clone, Copy)]
struct RawMemory {
    /// Raw bits of each channel's last value.
    weights: [u32; COUNT],
    /// Channels seen.
    seen: ChannelMask,
    /// Raw bits of the last head, left eye and right eye rotations.
    rotations: [Option<[u32; 4]>; 3],
}

impl RawMemory {
    fn new() -> RawMemory {
        RawMemory {
            weights: [0; COUNT],
            seen: ChannelMask::EMPTY,
            rotations: [None; 3],
        }
    }

    /// Records `raw`'s values; returns whether any differs from what was recorded before. Bits
    /// are compared, so a repeated NaN counts as a repeat.
    fn update(&mut self, raw: &FaceFrame) -> bool {
        let mut changed = false;
        for c in raw.present.iter() {
            let bits = raw.weights[c.index()].to_bits();
            if !self.seen.contains(c) || self.weights[c.index()] != bits {
                changed = true;
            }
            self.weights[c.index()] = bits;
        }
        self.seen = self.seen.union(raw.present);
        for (slot, q) in self
            .rotations
            .iter_mut()
            .zip([raw.head, raw.left_eye, raw.right_eye])
        {
            if let Some(q) = q {
                let bits = q.to_array().map(f32::to_bits);
                if *slot != Some(bits) {
                    changed = true;
                }
                *slot = Some(bits);
            }
        }
        changed
    }
}

/// Calibration plus the tracking-loss state machine: the pure core of the ingest side. Feed it
/// every committed frame ([`Conditioner::on_frame`]) and a tick every few milliseconds
/// ([`Conditioner::on_tick`]); hand the frames it returns to the renderer. Allocation-free.
#[derive(Debug, Clone)]
pub struct Conditioner {
    /// Remap, clamp, smooth.
    calibrator: Calibrator,
    /// Timings.
    tracking: TrackingConfig,
    /// What the fade ends at.
    neutral: NeutralPose,
    /// The current state.
    state: TrackingState,
    /// When the current state began (for Hold, Fade and Reacquire: the exact instant).
    since: Instant,
    /// When the last frame of any kind arrived.
    last_frame: Option<Instant>,
    /// When the last frame that changed a value arrived.
    last_change: Option<Instant>,
    /// Raw values, for frozen-frame detection.
    raw: RawMemory,
    /// The latest calibrated live frame.
    live: Option<FaceFrame>,
    /// The last frame handed out.
    shown: Option<FaceFrame>,
    /// The pose the current Hold, Fade or Reacquire starts from.
    from: Option<FaceFrame>,
    /// When a frame was last handed out.
    last_emit: Option<Instant>,
}

impl Conditioner {
    /// A conditioner in [`TrackingState::Neutral`], waiting for the first frame. `now` is any
    /// instant not after the first call.
    pub fn new(smoothing: SmoothingConfig, tracking: TrackingConfig, now: Instant) -> Conditioner {
        Conditioner {
            calibrator: Calibrator::new(smoothing),
            tracking,
            neutral: NeutralPose::default(),
            state: TrackingState::Neutral,
            since: now,
            last_frame: None,
            last_change: None,
            raw: RawMemory::new(),
            live: None,
            shown: None,
            from: None,
            last_emit: None,
        }
    }

    /// The current state.
    pub fn state(&self) -> TrackingState {
        self.state
    }

    /// The calibration stage inside.
    pub fn calibrator(&self) -> &Calibrator {
        &self.calibrator
    }

    /// Replaces the per-channel input ranges (a performer profile).
    pub fn set_ranges(&mut self, ranges: [ChannelRange; COUNT]) {
        self.calibrator.set_ranges(ranges);
    }

    /// Replaces the smoothing settings.
    pub fn set_smoothing(&mut self, smoothing: SmoothingConfig) {
        self.calibrator.set_smoothing(smoothing);
    }

    /// Replaces the timings; they apply from the next call.
    pub fn set_tracking(&mut self, tracking: TrackingConfig) {
        self.tracking = tracking;
    }

    /// Takes `raw` as the performer's neutral (see [`Calibrator::capture_neutral`]).
    pub fn capture_neutral(&mut self, raw: &FaceFrame) -> super::NeutralCapture {
        self.calibrator.capture_neutral(raw)
    }

    /// Sets the head and eye rest rotations (see [`Calibrator::set_rest`]).
    pub fn set_rest(&mut self, rest: [Option<Quat>; 3]) {
        self.calibrator.set_rest(rest);
    }

    /// Replaces the pose the fade ends at (a performer's neutral).
    pub fn set_neutral(&mut self, neutral: NeutralPose) {
        self.neutral = neutral;
    }

    /// Takes one committed frame received at `now`.
    pub fn on_frame(&mut self, raw: &FaceFrame, now: Instant) -> Output {
        let mut out = Output::none();
        self.last_frame = Some(now);
        let changed = self.raw.update(raw);
        if changed {
            self.last_change = Some(now);
        }
        let lost_flag = raw.tracking == TrackingFlag::Lost;
        match self.state {
            TrackingState::Tracking | TrackingState::Reacquire => {
                if lost_flag {
                    self.lose(LossReason::SenderLost, now, &mut out);
                } else if let Some(at) = self.frozen_at(now) {
                    self.lose(LossReason::Frozen, at, &mut out);
                } else {
                    self.live = Some(self.calibrator.apply(raw));
                    self.advance(now, &mut out);
                    self.show(self.live_output(now), &mut out);
                    self.last_emit = Some(now);
                    return out;
                }
                self.advance(now, &mut out);
                self.emit_made_up(now, &mut out);
            }
            TrackingState::Stale
            | TrackingState::Hold
            | TrackingState::Fade
            | TrackingState::Neutral => {
                if changed && !lost_flag {
                    self.calibrator.reset();
                    self.live = Some(self.calibrator.apply(raw));
                    self.from = self
                        .shown
                        .or_else(|| self.live.map(|l| self.neutral_of(&l)));
                    self.enter(TrackingState::Reacquire, now, &mut out);
                    self.advance(now, &mut out);
                    self.show(self.live_output(now), &mut out);
                    self.last_emit = Some(now);
                } else {
                    self.advance(now, &mut out);
                    self.emit_made_up(now, &mut out);
                }
            }
        }
        out
    }

    /// Lets time pass: detects silence, moves through Hold and Fade, advances an ease-in, and
    /// makes up frames while the pose changes without live data.
    pub fn on_tick(&mut self, now: Instant) -> Output {
        let mut out = Output::none();
        if matches!(
            self.state,
            TrackingState::Tracking | TrackingState::Reacquire
        ) {
            if let Some(last) = self.last_frame {
                let at = last + self.tracking.stale_after();
                if now >= at {
                    self.lose(LossReason::Silence, at, &mut out);
                }
            }
        }
        self.advance(now, &mut out);
        self.emit_made_up(now, &mut out);
        out
    }

    /// When repeated frames have frozen the face for `frozen_after`, the instant that became
    /// true.
    fn frozen_at(&self, now: Instant) -> Option<Instant> {
        let at = self.last_change? + self.tracking.frozen_after();
        (now >= at).then_some(at)
    }

    fn enter(&mut self, state: TrackingState, at: Instant, out: &mut Output) {
        self.state = state;
        self.since = at;
        out.push(state);
        info!(state = state.name(), "tracking state");
    }

    /// Stale, then Hold from `at`, holding whatever is shown.
    fn lose(&mut self, reason: LossReason, at: Instant, out: &mut Output) {
        out.reason = Some(reason);
        self.state = TrackingState::Stale;
        out.push(TrackingState::Stale);
        info!(
            state = "stale",
            reason = ?reason,
            "tracking state"
        );
        self.from = self.shown.or(self.live);
        self.enter(TrackingState::Hold, at, out);
    }

    /// Runs the timed transitions due by `now`.
    fn advance(&mut self, now: Instant, out: &mut Output) {
        loop {
            match self.state {
                TrackingState::Hold if now >= self.since + self.tracking.hold() => {
                    let at = self.since + self.tracking.hold();
                    self.enter(TrackingState::Fade, at, out);
                }
                TrackingState::Fade if now >= self.since + self.tracking.fade() => {
                    let at = self.since + self.tracking.fade();
                    self.enter(TrackingState::Neutral, at, out);
                }
                TrackingState::Reacquire if now >= self.since + self.tracking.ease_in() => {
                    let at = self.since + self.tracking.ease_in();
                    self.enter(TrackingState::Tracking, at, out);
                }
                _ => return,
            }
        }
    }

    /// The tracking layer while live data flows: the live frame at full weight, eased in from
    /// what was shown (`from`) during Reacquire.
    fn live_output(&self, now: Instant) -> Option<(FaceFrame, f32)> {
        let live = self.live?;
        let mut frame = match (self.state, self.from) {
            (TrackingState::Reacquire, Some(from)) => {
                let s = progress(now, self.since, self.tracking.ease_in());
                blend(&from, &live, smoothstep(s))
            }
            _ => live,
        };
        frame.received = now.max(live.received);
        sanitize(&mut frame);
        Some((frame, 1.0))
    }

    /// Puts the tracking layer `layer` into `out`, with the frame it makes over the neutral
    /// pose, and remembers that frame as shown.
    fn show(&mut self, layer: Option<(FaceFrame, f32)>, out: &mut Output) {
        out.layer = layer;
        out.frame = layer.map(|(values, weight)| self.over_neutral(&values, weight));
        if out.frame.is_some() {
            self.shown = out.frame;
        }
    }

    /// `values` over the neutral pose by `weight`: each channel `n + (v − n)·w`, each rotation
    /// slerped from the neutral's, exactly as the mixer's override layer over its rest pose.
    fn over_neutral(&self, values: &FaceFrame, weight: f32) -> FaceFrame {
        if weight >= 1.0 {
            return *values;
        }
        let mut out = *values;
        for c in values.present.iter() {
            let (n, v) = (self.neutral.weights[c.index()], values.weights[c.index()]);
            out.weights[c.index()] = n + (v - n) * weight;
        }
        let over = |n: Quat, v: Option<Quat>| {
            v.map(|v| if weight <= 0.0 { n } else { n.slerp(v, weight) })
        };
        out.head = over(self.neutral.head, values.head);
        out.left_eye = over(self.neutral.left_eye, values.left_eye);
        out.right_eye = over(self.neutral.right_eye, values.right_eye);
        sanitize(&mut out);
        out
    }

    /// The pose the fade ends at.
    pub fn neutral(&self) -> NeutralPose {
        self.neutral
    }

    /// A frame made up without new live data (Hold, Fade, Neutral, or Reacquire between live
    /// frames), at most one per [`FRAME_INTERVAL`], and one whenever the state changed.
    fn emit_made_up(&mut self, now: Instant, out: &mut Output) {
        let due = out.changes > 0
            || self
                .last_emit
                .is_none_or(|t| now.saturating_duration_since(t) >= FRAME_INTERVAL);
        if !due {
            return;
        }
        let layer = match self.state {
            TrackingState::Tracking => return,
            TrackingState::Reacquire => self.live_output(now),
            TrackingState::Neutral if out.changes == 0 => return,
            TrackingState::Stale | TrackingState::Hold => self.from.map(|from| (from, 1.0)),
            TrackingState::Fade => self.from.map(|from| {
                let s = progress(now, self.since, self.tracking.fade());
                (from, 1.0 - smoothstep(s))
            }),
            TrackingState::Neutral => self.from.map(|from| (from, 0.0)),
        };
        let Some((mut values, weight)) = layer else {
            return;
        };
        values.received = now;
        if self.state != TrackingState::Reacquire {
            values.tracking = TrackingFlag::Lost;
        }
        sanitize(&mut values);
        self.show(Some((values, weight)), out);
        self.last_emit = Some(now);
    }

    /// The neutral pose with `like`'s channels and metadata.
    fn neutral_of(&self, like: &FaceFrame) -> FaceFrame {
        let mut n = *like;
        for c in n.present.iter() {
            n.weights[c.index()] = self.neutral.weights[c.index()];
        }
        n.head = like.head.map(|_| self.neutral.head);
        n.left_eye = like.left_eye.map(|_| self.neutral.left_eye);
        n.right_eye = like.right_eye.map(|_| self.neutral.right_eye);
        n
    }
}

/// How far `now` is through a span of `length` starting at `start`, in [0, 1].
fn progress(now: Instant, start: Instant, length: Duration) -> f32 {
    if length.is_zero() {
        return 1.0;
    }
    (now.saturating_duration_since(start).as_secs_f32() / length.as_secs_f32()).clamp(0.0, 1.0)
}

/// `3s² − 2s³`: starts and ends with zero speed, so neither end of a fade or ease pops. Its
/// steepest slope is 1.5 at `s = 0.5`.
fn smoothstep(s: f32) -> f32 {
    let s = s.clamp(0.0, 1.0);
    s * s * (3.0 - 2.0 * s)
}

/// `a` blended towards `b` by `t`: weights linearly, rotations by slerp. Channels and rotations
/// only one side has come from that side.
fn blend(a: &FaceFrame, b: &FaceFrame, t: f32) -> FaceFrame {
    let mut out = *b;
    out.present = a.present.union(b.present);
    for c in out.present.iter() {
        let i = c.index();
        out.weights[i] = match (a.present.contains(c), b.present.contains(c)) {
            (true, true) => a.weights[i] + t * (b.weights[i] - a.weights[i]),
            (true, false) => a.weights[i],
            _ => b.weights[i],
        };
    }
    let mix = |p: Option<Quat>, q: Option<Quat>| match (p, q) {
        (Some(p), Some(q)) => Some(p.slerp(q, t)),
        (p, q) => q.or(p),
    };
    out.head = mix(a.head, b.head);
    out.left_eye = mix(a.left_eye, b.left_eye);
    out.right_eye = mix(a.right_eye, b.right_eye);
    out
}

/// The tracking state at the end of a run and how many changes led there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TrackingSummary {
    /// The state at exit.
    pub state: TrackingState,
    /// State changes during the run.
    pub changes: u64,
}

impl Default for TrackingSummary {
    fn default() -> Self {
        TrackingSummary {
            state: TrackingState::Neutral,
            changes: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::calibrate::at;

    fn frame(t: Instant, jaw: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t);
        f.set(Channel::JawOpen, jaw);
        f.head = Some(Quat::from_rotation_y(0.3));
        f
    }

    fn conditioner(t0: Instant) -> Conditioner {
        Conditioner::new(SmoothingConfig::off(), TrackingConfig::default(), t0)
    }

    #[test]
    fn first_frame_eases_in_from_neutral() {
        let t0 = Instant::now();
        let mut c = conditioner(t0);
        let out = c.on_frame(&frame(t0, 0.8), t0);
        assert_eq!(
            out.states(),
            [TrackingState::Reacquire],
            "{:?}",
            out.states()
        );
        assert_eq!(out.frame.unwrap().get(Channel::JawOpen), Some(0.0));
        let out = c.on_frame(&frame(at(t0, 0.5), 0.81), at(t0, 0.5));
        assert_eq!(out.states(), [TrackingState::Tracking]);
        assert_eq!(out.frame.unwrap().get(Channel::JawOpen), Some(0.81));
    }

    #[test]
    fn a_lost_face_is_the_held_pose_at_a_falling_weight() {
        let t0 = Instant::now();
        let mut c = conditioner(t0);
        let mut neutral = NeutralPose::default();
        neutral.weights[Channel::JawOpen.index()] = 0.2;
        c.set_neutral(neutral);
        c.on_frame(&frame(t0, 0.5), t0);
        c.on_frame(&frame(at(t0, 1.0), 0.6), at(t0, 1.0));
        let mut weights = Vec::new();
        for i in 1..=150 {
            let out = c.on_tick(at(t0, 1.0 + i as f64 * 0.01));
            let (Some(shown), Some((values, weight))) = (out.frame, out.layer) else {
                continue;
            };
            assert_eq!(values.get(Channel::JawOpen), Some(0.6), "the held pose");
            let expected = 0.2 + (0.6 - 0.2) * weight;
            assert!((shown.get(Channel::JawOpen).unwrap() - expected).abs() < 1e-6);
            weights.push(weight);
        }
        assert_eq!(weights.first(), Some(&1.0), "held at full weight first");
        assert_eq!(weights.last(), Some(&0.0), "faded out at the end");
        assert!(weights.windows(2).all(|w| w[1] <= w[0]), "{weights:?}");
    }

    #[test]
    fn made_up_frames_are_rate_limited() {
        let t0 = Instant::now();
        let mut c = conditioner(t0);
        c.on_frame(&frame(t0, 0.5), t0);
        c.on_frame(&frame(at(t0, 1.0), 0.6), at(t0, 1.0));
        let mut emitted = 0;
        for i in 1..=100 {
            // 1 s of ticks every 10 ms after the last frame.
            if c.on_tick(at(t0, 1.0 + i as f64 * 0.01)).frame.is_some() {
                emitted += 1;
            }
        }
        // Hold and fade last 0.8 s: 40 frames at 20 ms, plus one per state change.
        assert!((35..=50).contains(&emitted), "{emitted}");
        assert_eq!(c.state(), TrackingState::Neutral);
    }
}
