//! The guided calibration routine: the step list, the [`Routine`] state machine that records raw
//! frames per step, and the robust statistics that turn samples into a [`Profile`], with a
//! reviewable [`Summary`]. Offline calibration from a recording ([`super::offline`]) applies
//! the same rule with the rest it finds in the take as the neutral step.
//!
//! Statistics: a channel's neutral is the median of the neutral step; its `min` is that
//! neutral (a resting face maps to 0), except for the eyelid blink channels, whose `min` is the
//! performer's typical open eye over the whole routine ([`open_eye`]), whatever the neutral step
//! showed: the eyes are open through most of the steps, looking down and aside, which lowers the
//! lids a little, while the neutral step is often held with the eyes wider than usual, so a `min`
//! taken there would leave an ordinary open eye reading partly closed. Its `max` is the 95th
//! percentile of the steps that target it, so a single tracker spike never sets a range.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use tracing::{debug, info, trace};

use super::offline::{rest_values, Rest};
use super::profile::{ChannelProfile, Profile};
use super::ChannelRange;
use crate::arkit::{Channel, FaceFrame, TrackingFlag, COUNT};

/// What a step asks of the performer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Hold a resting face: sets every channel's neutral.
    Neutral,
    /// Move as far as possible: sets the `max` of the step's channels.
    Extreme,
}

/// One step of the guided routine.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// A short stable identifier (`"blink"`).
    pub id: &'static str,
    /// The large prompt text (`"Blink"`).
    pub title: &'static str,
    /// What to do, one or two sentences.
    pub instruction: &'static str,
    /// The channels the step calibrates (every step records every channel, for the eyelids'
    /// open eye, but only these take their `max` from it).
    pub channels: &'static [Channel],
    /// How long the step records.
    pub duration: Duration,
    /// Neutral or extreme.
    pub kind: StepKind,
}

/// How long each step's countdown lasts before recording starts.
pub const PREPARE: Duration = Duration::from_secs(2);

/// The highest sample rate kept per step: buffers hold at most this many samples per second of
/// recording, and faster senders are subsampled evenly.
pub const MAX_RATE_HZ: f32 = 60.0;

/// The percentile of a step's samples that becomes a channel's `max` (guided routine).
pub const HIGH_PERCENTILE: f32 = 0.95;

/// The percentile of every sample of a blink channel (every step of the routine, or the whole
/// take) that is its low value, from which [`open_eye`] measures how far a lid has closed.
pub const LOW_PERCENTILE: f32 = 0.01;

/// A blink channel's sample is an open eye when it lies below this fraction of the way from the
/// channel's low value to its `max`: short of a blink, a squint or a long look down, each of
/// which closes the lid much further.
pub const OPEN_EYE_FRACTION: f32 = 1.0 / 3.0;

/// The percentile of the open-eye samples that becomes a blink channel's `min`. An open eye is a
/// spread, not one value (looking down or aside lowers the lid a little), so the upper quartile
/// rather than the median: three open-eye frames in four read 0 and the rest only their small
/// excess, while a real blink still spans nearly the whole range.
pub const OPEN_EYE_PERCENTILE: f32 = 0.75;

/// A channel whose `max - min` is below this (raw units) barely moved: it is flagged and not
/// recalibrated, because a range that narrow would turn tracker noise into full motion.
pub const BARELY_MOVED: f32 = 0.1;

const NEUTRAL_SECS: Duration = Duration::from_secs(4);
const EXTREME_SECS: Duration = Duration::from_secs(3);

/// Blink channels: their `min` is the typical open eye ([`open_eye`]), not the neutral value.
///
/// eyeSquint and eyeWide keep the neutral as their `min`, like every other channel. A blink is a
/// brief departure from a state the eye holds most of the time, so the bulk of a take is the open
/// eye; squinting or widening the eyes are expressions held for seconds along with a smile, a
/// frown or raised brows, so the bulk of a take is whatever it performed. On the Live Link Face
/// range-of-motion take in the test fixtures the rest found reads eyeSquint 0.075, as does the
/// 1.6 s opening hold (0.056 to 0.079), while the take's median (0.120) and the open-eye rule's
/// value (0.118) are raised by its smiles and frowns: as `min` either would swallow a ninth of the
/// squint's range. The only calm frames (jaw and lids at rest) where eyeSquint reads above 0.05
/// are in the take's last second, with the brows still lowered as the face relaxes. eyeWide rests
/// at 0 there and never passes 0.023.
const EYELIDS: [Channel; 2] = [Channel::EyeBlinkLeft, Channel::EyeBlinkRight];

const fn extreme(
    id: &'static str,
    title: &'static str,
    instruction: &'static str,
    channels: &'static [Channel],
) -> Step {
    Step {
        id,
        title,
        instruction,
        channels,
        duration: EXTREME_SECS,
        kind: StepKind::Extreme,
    }
}

use Channel as C;

/// The guided routine, in order. "Left" and "right" are the performer's own.
pub static STEPS: &[Step] = &[
    Step {
        id: "neutral",
        title: "Neutral face",
        instruction:
            "Relax your face: mouth closed, eyes open, looking straight at the camera. Hold still.",
        channels: &Channel::ALL,
        duration: NEUTRAL_SECS,
        kind: StepKind::Neutral,
    },
    extreme(
        "blink",
        "Blink",
        "Close both eyes fully, then open them. Repeat a few times.",
        &[C::EyeBlinkLeft, C::EyeBlinkRight],
    ),
    extreme(
        "eyes-wide",
        "Eyes wide",
        "Open your eyes as wide as you can and hold.",
        &[C::EyeWideLeft, C::EyeWideRight],
    ),
    extreme(
        "squint",
        "Squint",
        "Squint both eyes hard, cheeks up, and hold.",
        &[
            C::EyeSquintLeft,
            C::EyeSquintRight,
            C::CheekSquintLeft,
            C::CheekSquintRight,
        ],
    ),
    extreme(
        "look-left",
        "Look left",
        "Keep your head still and look as far to your left as you can.",
        &[C::EyeLookOutLeft, C::EyeLookInRight],
    ),
    extreme(
        "look-right",
        "Look right",
        "Keep your head still and look as far to your right as you can.",
        &[C::EyeLookInLeft, C::EyeLookOutRight],
    ),
    extreme(
        "look-up",
        "Look up",
        "Keep your head still and look up as far as you can.",
        &[C::EyeLookUpLeft, C::EyeLookUpRight],
    ),
    extreme(
        "look-down",
        "Look down",
        "Keep your head still and look down as far as you can (eyes open).",
        &[C::EyeLookDownLeft, C::EyeLookDownRight],
    ),
    extreme(
        "brows-up",
        "Brows up",
        "Raise both eyebrows as high as you can and hold.",
        &[C::BrowInnerUp, C::BrowOuterUpLeft, C::BrowOuterUpRight],
    ),
    extreme(
        "brows-down",
        "Brows down",
        "Pull both eyebrows down into a frown and hold.",
        &[C::BrowDownLeft, C::BrowDownRight],
    ),
    extreme(
        "jaw-open",
        "Jaw open wide",
        "Open your mouth as wide as you can and hold.",
        &[C::JawOpen],
    ),
    extreme(
        "jaw-left",
        "Jaw left",
        "Mouth closed, slide your jaw to your left and hold.",
        &[C::JawLeft],
    ),
    extreme(
        "jaw-right",
        "Jaw right",
        "Mouth closed, slide your jaw to your right and hold.",
        &[C::JawRight],
    ),
    extreme(
        "smile",
        "Smile",
        "Smile as widely as you can and hold.",
        &[
            C::MouthSmileLeft,
            C::MouthSmileRight,
            C::MouthDimpleLeft,
            C::MouthDimpleRight,
        ],
    ),
    extreme(
        "frown",
        "Frown",
        "Pull the corners of your mouth down as far as you can and hold.",
        &[
            C::MouthFrownLeft,
            C::MouthFrownRight,
            C::MouthStretchLeft,
            C::MouthStretchRight,
        ],
    ),
    extreme(
        "pucker",
        "Pucker",
        "Push your lips forward into a kiss and hold.",
        &[C::MouthPucker],
    ),
    extreme(
        "funnel",
        "Funnel",
        "Round your lips into an open \"oo\" and hold.",
        &[C::MouthFunnel],
    ),
    extreme(
        "mouth-left",
        "Mouth left",
        "Pull your closed lips to your left and hold.",
        &[C::MouthLeft],
    ),
    extreme(
        "mouth-right",
        "Mouth right",
        "Pull your closed lips to your right and hold.",
        &[C::MouthRight],
    ),
    extreme(
        "cheek-puff",
        "Cheek puff",
        "Puff out both cheeks with air and hold.",
        &[C::CheekPuff],
    ),
    extreme(
        "sneer",
        "Sneer",
        "Wrinkle your nose and raise your upper lip, and hold.",
        &[
            C::NoseSneerLeft,
            C::NoseSneerRight,
            C::MouthUpperUpLeft,
            C::MouthUpperUpRight,
        ],
    ),
    extreme(
        "tongue-out",
        "Tongue out",
        "Stick your tongue out as far as you can and hold.",
        &[C::TongueOut],
    ),
];

/// How long `steps` take once face data flows: each step's `prepare` countdown and recording,
/// without the time spent waiting for the phone or reviewing.
pub fn routine_duration(steps: &[Step], prepare: Duration) -> Duration {
    steps.iter().map(|s| prepare + s.duration).sum()
}

/// A duration in whole minutes and seconds, as the terminal and the README say it:
/// `1 min 51 s`, `45 s`.
pub fn minutes_and_seconds(d: Duration) -> String {
    let secs = d.as_secs_f64().round() as u64;
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

/// Face data must have arrived this recently for the routine to run; after this long without it
/// the routine waits, and the step starts again from its countdown when data comes back.
pub const NO_DATA: Duration = Duration::from_millis(500);

/// Where the routine is within the current step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No face data (none yet, or the phone stopped): time stands still; nothing is recorded.
    Waiting,
    /// Countdown: the performer gets into the pose; nothing is recorded.
    Prepare,
    /// Frames are recorded for the step.
    Record,
    /// Every step is done.
    Finished,
}

/// What the window and the terminal show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prompt {
    /// The current step's index (0-based); equals `steps` when finished.
    pub step: usize,
    /// How many steps the routine has.
    pub steps: usize,
    /// The large prompt text.
    pub title: &'static str,
    /// What to do.
    pub instruction: &'static str,
    /// Countdown, recording or finished.
    pub phase: Phase,
    /// How far through the phase, 0 to 1 (the progress bar).
    pub progress: f32,
    /// Time left in the phase (a countdown's "3, 2, 1").
    pub remaining: Duration,
}

/// Values of one channel (or whole moments of a take), bounded: when full, every other value is
/// dropped and from then on only every other offered value is kept, so the buffer always covers
/// the whole time span, evenly.
#[derive(Debug, Clone, Default)]
pub struct Samples<T = f32> {
    /// The kept values.
    values: Vec<T>,
    /// The most values kept.
    cap: usize,
    /// Keep one offered value in `stride`.
    stride: usize,
    /// Values offered so far.
    offered: usize,
}

impl Samples {
    /// An empty buffer holding at most `cap` values (at least 2).
    pub fn new(cap: usize) -> Samples {
        Samples::bounded(cap)
    }

    /// Offers a value; non-finite values are ignored.
    pub fn push(&mut self, v: f32) {
        if v.is_finite() {
            self.offer(v);
        }
    }
}

impl<T> Samples<T> {
    /// An empty buffer holding at most `cap` values (at least 2).
    pub fn bounded(cap: usize) -> Samples<T> {
        Samples {
            values: Vec::new(),
            cap: cap.max(2),
            stride: 1,
            offered: 0,
        }
    }

    /// Offers a value, kept or not by the thinning described on the type.
    pub fn offer(&mut self, v: T) {
        let keep = self.offered.is_multiple_of(self.stride);
        self.offered += 1;
        if !keep {
            return;
        }
        if self.values.len() >= self.cap {
            let mut i = 0;
            self.values.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride *= 2;
        }
        self.values.push(v);
    }

    /// The kept values.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Whether no value was kept.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.values.clear();
        self.stride = 1;
        self.offered = 0;
    }
}

/// The `p` quantile (0..1) of `values`, linearly interpolated between ranks, so it always lies
/// within the data; `None` for no values.
pub fn percentile(values: &[f32], p: f32) -> Option<f32> {
    let mut v: Vec<f32> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    let pos = p.clamp(0.0, 1.0) * (v.len() - 1) as f32;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    let t = pos - lo as f32;
    Some(v[lo] + (v[hi] - v[lo]) * t)
}

/// Why a summary row deserves attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The channel's range came out narrower than [`BARELY_MOVED`]: the old calibration (or
    /// none) is kept; repeat the step to calibrate it.
    BarelyMoved,
    /// No sample of the channel arrived (the sender may not send it): nothing changed.
    NoData,
}

/// One channel of a calibration's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummaryRow {
    /// The channel.
    pub channel: Channel,
    /// The step that calibrates it (0-based), `None` offline.
    pub step: Option<usize>,
    /// The previous profile's range, if it calibrated the channel.
    pub old: Option<ChannelRange>,
    /// The range that will be saved (the old one, or identity, for flagged rows).
    pub new: ChannelRange,
    /// The measured neutral value (raw), when there were samples.
    pub neutral: Option<f32>,
    /// What is wrong, if anything.
    pub flag: Option<Flag>,
}

/// The per-channel outcome of a calibration, for review before saving.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// One row per calibrated channel, canonical order.
    pub rows: Vec<SummaryRow>,
    /// Offline: the stretch of the take whose medians are the neutral values.
    pub rest: Option<Rest>,
}

impl Summary {
    /// The rows with a flag.
    pub fn flagged(&self) -> impl Iterator<Item = &SummaryRow> {
        self.rows.iter().filter(|r| r.flag.is_some())
    }

    /// The row of `channel`, if it was calibrated.
    pub fn row(&self, channel: Channel) -> Option<&SummaryRow> {
        self.rows.iter().find(|r| r.channel == channel)
    }
}

fn range_text(r: Option<ChannelRange>) -> String {
    r.map_or_else(
        || "-".to_string(),
        |r| format!("{:.3}..{:.3}", r.min, r.max),
    )
}

impl fmt::Display for Summary {
    /// Offline, where the neutral face was found and a few of its values; then an aligned
    /// table: channel, step, old range, new range, neutral and a note.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(rest) = &self.rest {
            writeln!(f, "{rest}")?;
            writeln!(f, "  at rest: {}\n", rest_values(&self.rows))?;
        }
        writeln!(
            f,
            "{:<20} {:>4}  {:<13}  {:<13}  {:>7}  note",
            "channel", "step", "old", "new", "neutral"
        )?;
        for r in &self.rows {
            let step = r
                .step
                .map_or_else(|| "-".to_string(), |s| (s + 1).to_string());
            let neutral = r
                .neutral
                .map_or_else(|| "-".to_string(), |n| format!("{n:.3}"));
            let note = match r.flag {
                None => "",
                Some(Flag::BarelyMoved) if r.old.is_some() => "barely moved: kept the old range",
                Some(Flag::BarelyMoved) => "barely moved: left uncalibrated",
                Some(Flag::NoData) => "no data: unchanged",
            };
            writeln!(
                f,
                "{:<20} {:>4}  {:<13}  {:<13}  {:>7}  {}",
                r.channel.name(),
                step,
                range_text(r.old),
                range_text(Some(r.new)),
                neutral,
                note
            )?;
        }
        Ok(())
    }
}

/// A finished calibration: the profile to save and its summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The new profile (uncalibrated channels and smoothing carried over from the old one).
    pub profile: Profile,
    /// What changed, per channel.
    pub summary: Summary,
}

/// The guided routine's state machine. Feed it raw frames (before any profile is applied, so
/// that ranges come out in tracker units) with [`Routine::feed`], call [`Routine::tick`] often
/// (every few tens of milliseconds), show [`Routine::prompt`], and when [`Routine::is_done`]
/// take [`Routine::result`]. Time only moves through the `now` arguments.
#[derive(Debug, Clone)]
pub struct Routine {
    /// The steps.
    steps: &'static [Step],
    /// The countdown before each step.
    prepare: Duration,
    /// Steps still to run; the front is the current one.
    queue: VecDeque<usize>,
    /// The current step's phase.
    phase: Phase,
    /// When the current phase started; `None` until the next tick or frame.
    phase_start: Option<Instant>,
    /// The latest time seen.
    now: Option<Instant>,
    /// Per step, per channel (canonical order).
    samples: Vec<Vec<Samples>>,
    /// When the last frame with face data arrived (not flagged lost by the sender).
    last_data: Option<Instant>,
    /// Whether any face data has arrived.
    had_data: bool,
}

impl Default for Routine {
    fn default() -> Routine {
        Routine::new()
    }
}

impl Routine {
    /// The full routine ([`STEPS`], [`PREPARE`] countdowns).
    pub fn new() -> Routine {
        Routine::with_steps(STEPS, PREPARE)
    }

    /// A routine over `steps` with a `prepare` countdown before each.
    pub fn with_steps(steps: &'static [Step], prepare: Duration) -> Routine {
        let samples = steps
            .iter()
            .map(|s| {
                let cap = (s.duration.as_secs_f32() * MAX_RATE_HZ).ceil() as usize + 1;
                vec![Samples::new(cap); COUNT]
            })
            .collect();
        Routine {
            steps,
            prepare,
            queue: (0..steps.len()).collect(),
            phase: if steps.is_empty() {
                Phase::Finished
            } else {
                Phase::Waiting
            },
            phase_start: None,
            now: None,
            samples,
            last_data: None,
            had_data: false,
        }
    }

    /// The steps.
    pub fn steps(&self) -> &'static [Step] {
        self.steps
    }

    /// The step being run, if any.
    pub fn current(&self) -> Option<usize> {
        self.queue.front().copied()
    }

    /// Whether every step is done.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty()
    }

    fn phase_length(&self) -> Duration {
        match (self.phase, self.current()) {
            (Phase::Prepare, Some(_)) => self.prepare,
            (Phase::Record, Some(i)) => self.steps[i].duration,
            _ => Duration::ZERO,
        }
    }

    /// Advances the phases to `now`. A phase starts when the previous one is seen to end, so a
    /// late tick delays the routine rather than skipping a step. Without face data for
    /// [`NO_DATA`] the routine waits: what the current step recorded is dropped, and the step
    /// starts again from its countdown when data comes back.
    pub fn tick(&mut self, now: Instant) {
        self.now = Some(now);
        let Some(step) = self.current() else {
            self.phase = Phase::Finished;
            return;
        };
        let fresh = self
            .last_data
            .is_some_and(|t| now.saturating_duration_since(t) <= NO_DATA);
        if !fresh {
            if self.phase != Phase::Waiting {
                self.samples[step].iter_mut().for_each(Samples::clear);
                self.phase = Phase::Waiting;
                self.phase_start = None;
                info!(
                    step = self.steps[step].id,
                    "no face data: calibration waits"
                );
            }
            return;
        }
        if self.phase == Phase::Waiting {
            self.phase = Phase::Prepare;
            self.phase_start = Some(now);
            info!(step = self.steps[step].id, "face data: calibration goes on");
        }
        let start = *self.phase_start.get_or_insert(now);
        if now.saturating_duration_since(start) < self.phase_length() {
            return;
        }
        match self.phase {
            // Fresh data turned waiting into a countdown above.
            Phase::Prepare | Phase::Waiting => {
                self.phase = Phase::Record;
                debug!(step = self.steps[step].id, "recording step");
            }
            Phase::Record | Phase::Finished => {
                self.queue.pop_front();
                debug!(step = self.steps[step].id, "step done");
                self.phase = if self.queue.is_empty() {
                    Phase::Finished
                } else {
                    Phase::Prepare
                };
            }
        }
        self.phase_start = Some(now);
    }

    /// Records `frame`'s channels for the current step when it is recording (after advancing
    /// to `now`). Frames the sender marks as lost are ignored, and do not count as face data.
    pub fn feed(&mut self, frame: &FaceFrame, now: Instant) {
        if frame.tracking != TrackingFlag::Lost && !frame.present.is_empty() {
            self.last_data = Some(now);
            self.had_data = true;
        }
        self.tick(now);
        if self.phase != Phase::Record || frame.tracking == TrackingFlag::Lost {
            return;
        }
        let Some(step) = self.current() else {
            return;
        };
        for c in frame.present.iter() {
            self.samples[step][c.index()].push(frame.weights[c.index()]);
        }
        trace!(step = self.steps[step].id, "frame recorded");
    }

    /// What to show now.
    pub fn prompt(&self) -> Prompt {
        let Some(step) = self.current() else {
            return Prompt {
                step: self.steps.len(),
                steps: self.steps.len(),
                title: "Done",
                instruction: "Calibration finished. Review the summary.",
                phase: Phase::Finished,
                progress: 1.0,
                remaining: Duration::ZERO,
            };
        };
        if self.phase == Phase::Waiting {
            let (title, instruction) = if self.had_data {
                (
                    "Waiting for the phone",
                    "The phone stopped sending face data. Check the app is still running and \
                     sees your face: this step starts again when data comes back.",
                )
            } else {
                (
                    "Waiting for the phone",
                    "Start the face-tracking app and point it at your face: calibration starts \
                     when face data arrives.",
                )
            };
            return Prompt {
                step,
                steps: self.steps.len(),
                title,
                instruction,
                phase: Phase::Waiting,
                progress: 0.0,
                remaining: Duration::ZERO,
            };
        }
        let length = self.phase_length();
        let elapsed = match (self.phase_start, self.now) {
            (Some(start), Some(now)) => now.saturating_duration_since(start).min(length),
            _ => Duration::ZERO,
        };
        let progress = if length.is_zero() {
            1.0
        } else {
            (elapsed.as_secs_f32() / length.as_secs_f32()).clamp(0.0, 1.0)
        };
        let s = &self.steps[step];
        Prompt {
            step,
            steps: self.steps.len(),
            title: s.title,
            instruction: s.instruction,
            phase: self.phase,
            progress,
            remaining: length.saturating_sub(elapsed),
        }
    }

    /// Forgets `step`'s samples and runs it again next (its countdown starts at the next tick);
    /// when the routine had finished, it finishes again after that step. A step interrupted by
    /// the redo is restarted from its countdown later. Out-of-range steps are ignored.
    pub fn redo(&mut self, step: usize) {
        if step >= self.steps.len() {
            return;
        }
        if let (Phase::Record, Some(current)) = (self.phase, self.current()) {
            self.samples[current].iter_mut().for_each(Samples::clear);
        }
        self.queue.retain(|s| *s != step);
        self.queue.push_front(step);
        self.samples[step].iter_mut().for_each(Samples::clear);
        self.phase = Phase::Prepare;
        self.phase_start = None;
        debug!(step = self.steps[step].id, "step queued again");
    }

    /// The samples of `channel` recorded during `step`; `None` for a step out of range.
    pub fn samples(&self, step: usize, channel: Channel) -> Option<&[f32]> {
        Some(self.samples.get(step)?[channel.index()].values())
    }

    /// Every sample of `channel` from the steps of `kind` that target it (or from every step
    /// when `kind` is `None`), with the first extreme step that targets it.
    fn gather(&self, channel: Channel, kind: Option<StepKind>) -> (Vec<f32>, Option<usize>) {
        let mut all = Vec::new();
        let mut first = None;
        for (i, s) in self.steps.iter().enumerate() {
            if let Some(kind) = kind {
                if kind != s.kind || !s.channels.contains(&channel) {
                    continue;
                }
                if kind == StepKind::Extreme && first.is_none() {
                    first = Some(i);
                }
            }
            all.extend_from_slice(self.samples[i][channel.index()].values());
        }
        (all, first)
    }

    /// The calibration from the samples so far, for `performer`, on top of `old` (whose other
    /// channels and smoothing are kept). Every channel some extreme step records gets a row.
    pub fn result(&self, performer: &str, old: Option<&Profile>) -> Calibration {
        let mut profile = base_profile(performer, old);
        let mut summary = Summary::default();
        for channel in Channel::ALL {
            let (extremes, step) = self.gather(channel, Some(StepKind::Extreme));
            if step.is_none() {
                continue;
            }
            let (neutrals, _) = self.gather(channel, Some(StepKind::Neutral));
            let (everything, _) = self.gather(channel, None);
            let measured = measure(
                channel,
                &neutrals,
                percentile(&extremes, HIGH_PERCENTILE),
                &everything,
            );
            summary
                .rows
                .push(settle(&mut profile, old, channel, step, measured));
        }
        Calibration { profile, summary }
    }
}

/// A blink channel's open reference from every sample of it (`everything`) and its `max`
/// (`high`): the [`OPEN_EYE_PERCENTILE`] of the samples below [`OPEN_EYE_FRACTION`] of the way
/// from their [`LOW_PERCENTILE`] to `high`. Blinks are left out, not merely outvoted, because a
/// take may hold long closures (the routine's blink step, a range-of-motion take's eyes-closed
/// hold) that would otherwise pull the reference up. `None` without a sample.
pub(super) fn open_eye(everything: &[f32], high: f32) -> Option<f32> {
    let low = percentile(everything, LOW_PERCENTILE)?;
    let limit = low + (high - low).max(0.0) * OPEN_EYE_FRACTION;
    let open: Vec<f32> = everything.iter().copied().filter(|v| *v <= limit).collect();
    Some(percentile(&open, OPEN_EYE_PERCENTILE).unwrap_or(low))
}

/// A channel's calibration from the samples of a resting face (`neutrals`, their median is the
/// neutral), the high value `high` and every sample (`everything`, for the eyelids' open eye):
/// the rule of the module's documentation. `None` without a high value or any sample.
pub(super) fn measure(
    channel: Channel,
    neutrals: &[f32],
    high: Option<f32>,
    everything: &[f32],
) -> Option<ChannelProfile> {
    let high = high?;
    let low = percentile(everything, LOW_PERCENTILE)?;
    let neutral = percentile(neutrals, 0.5).unwrap_or(low);
    let min = if EYELIDS.contains(&channel) {
        open_eye(everything, high).unwrap_or(low)
    } else {
        neutral
    };
    Some(ChannelProfile {
        neutral,
        min,
        max: high,
    })
}

/// A new profile for `performer` carrying over `old`'s channels and smoothing.
pub(super) fn base_profile(performer: &str, old: Option<&Profile>) -> Profile {
    let mut profile = Profile::new(performer);
    if let Some(old) = old {
        profile.channels = old.channels;
        profile.smoothing = old.smoothing;
        profile.vowels.clone_from(&old.vowels);
    }
    profile
}

/// Decides `channel`'s new calibration from `measured` (None: no data), writes it into
/// `profile` and returns its summary row.
pub(super) fn settle(
    profile: &mut Profile,
    old: Option<&Profile>,
    channel: Channel,
    step: Option<usize>,
    measured: Option<ChannelProfile>,
) -> SummaryRow {
    let old_cal = old.and_then(|p| p.channels[channel.index()]);
    let keep = old_cal.map_or(ChannelRange::default(), |c| c.range());
    let mut row = SummaryRow {
        channel,
        step,
        old: old_cal.map(|c| c.range()),
        new: keep,
        neutral: measured.map(|m| m.neutral),
        flag: None,
    };
    match measured {
        None => row.flag = Some(Flag::NoData),
        Some(m) if m.max - m.min < BARELY_MOVED => {
            debug!(%channel, min = m.min, max = m.max, "channel barely moved");
            row.flag = Some(Flag::BarelyMoved);
        }
        Some(m) => {
            profile.set(channel, m);
            row.new = m.range();
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Protocol;

    #[test]
    fn steps_cover_the_routine() {
        assert_eq!(STEPS[0].kind, StepKind::Neutral);
        assert_eq!(STEPS[0].channels.len(), COUNT);
        let left = STEPS.iter().find(|s| s.id == "look-left").unwrap();
        assert_eq!(left.channels, &[C::EyeLookOutLeft, C::EyeLookInRight]);
        let mut ids: Vec<_> = STEPS.iter().map(|s| s.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), STEPS.len());
        assert!(STEPS[1..].iter().all(|s| s.kind == StepKind::Extreme));
    }

    #[test]
    fn the_readme_states_how_long_the_routine_takes() {
        let length = routine_duration(STEPS, PREPARE);
        assert_eq!(length, Duration::from_secs(111));
        assert_eq!(minutes_and_seconds(length), "1 min 51 s");
        assert_eq!(minutes_and_seconds(Duration::from_secs(45)), "45 s");
        assert_eq!(minutes_and_seconds(Duration::from_secs(120)), "2 min");
        let readme = include_str!("../../README.md");
        let section = &readme[readme.find("## Calibrate your face").unwrap()..];
        let section = &section[..section[3..].find("\n## ").unwrap()];
        let said = format!("{} steps", STEPS.len());
        assert!(section.contains(&said), "the README no longer says {said}");
        let said = minutes_and_seconds(length);
        assert!(section.contains(&said), "the README no longer says {said}");
    }

    #[test]
    fn the_routine_takes_the_eyes_open_reference_from_every_step_not_the_neutral_one() {
        // The performer holds the neutral step staring at the camera, eyes wider than usual
        // (blink 0.13); through the other steps their eyes are as they usually are (0.26,
        // +-0.03 as they look about), except for the blinks (0.9), the eyes-wide step (0.05),
        // the squint (0.6) and the look down (0.45).
        let usual = |n: usize| 0.26 + 0.03 * (n as f32 * 0.13).sin();
        let lid = |step: &str, n: usize| match step {
            "neutral" => 0.13,
            "blink" if n % 30 < 12 => 0.9,
            "eyes-wide" => 0.05,
            "squint" => 0.6,
            "look-down" => 0.45,
            _ => usual(n),
        };
        let mut r = Routine::new();
        let t0 = Instant::now();
        r.tick(t0);
        let mut n = 0;
        while !r.is_done() && n < 100_000 {
            n += 1;
            let t = t0 + Duration::from_secs_f64(n as f64 / 60.0);
            let step = STEPS.get(r.prompt().step).map_or("done", |s| s.id);
            let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t);
            for c in Channel::ALL {
                f.set(c, 0.02);
            }
            f.set(C::JawOpen, if step == "jaw-open" { 0.7 } else { 0.1 });
            f.set(C::EyeBlinkLeft, lid(step, n));
            f.set(C::EyeBlinkRight, lid(step, n));
            r.feed(&f, t);
        }
        assert!(r.is_done());
        let p = r.result("a", None).profile;
        for c in [C::EyeBlinkLeft, C::EyeBlinkRight] {
            let cal = p.channel(c);
            assert!((cal.neutral - 0.13).abs() < 1e-6, "{c}: {cal:?}");
            let range = cal.range();
            let open = (0..2000)
                .map(|n| range.apply(usual(n)))
                .fold(0.0f32, f32::max);
            assert!(
                open <= 0.05,
                "{c}: a usual open eye reads {open}, {range:?}"
            );
            assert_eq!(range.apply(0.13), 0.0, "{c}: {range:?}");
            assert!(range.apply(0.9) >= 0.95, "{c}: {range:?}");
            // A look down still lowers the lids, and the squint more.
            let (down, squint) = (range.apply(0.45), range.apply(0.6));
            assert!(
                down > 0.2 && squint > down,
                "{c}: {down} {squint}, {range:?}"
            );
        }
        // The other channels keep the neutral step's rule.
        let jaw = p.channel(C::JawOpen);
        assert!(
            (jaw.min - 0.1).abs() < 1e-6 && (jaw.max - 0.7).abs() < 1e-6,
            "{jaw:?}"
        );
    }

    #[test]
    fn the_open_eye_is_the_upper_quartile_of_the_frames_that_are_not_blinks() {
        // Open eyes spread over 0.2..0.3, a third of the frames closed (0.9): the reference is
        // the upper quartile of the open ones, not pulled up by the closures. No sample, no
        // reference; non-finite samples are ignored.
        let mut v: Vec<f32> = (0..600)
            .map(|i| 0.2 + 0.1 * (i % 100) as f32 / 99.0)
            .collect();
        v.extend(std::iter::repeat_n(0.9, 300));
        let open = open_eye(&v, 0.9).unwrap();
        assert!((open - 0.275).abs() < 0.002, "{open}");
        assert_eq!(open_eye(&[], 0.9), None);
        assert_eq!(open_eye(&[0.4, f32::NAN], 0.4), Some(0.4));
    }

    #[test]
    fn percentiles_interpolate_within_the_data() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[3.0], 0.9), Some(3.0));
        assert_eq!(percentile(&[0.0, 1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
        assert_eq!(percentile(&[4.0, 0.0, f32::NAN, 2.0], 1.0), Some(4.0));
        let p = percentile(&[0.0, 1.0], 0.25).unwrap();
        assert!((p - 0.25).abs() < 1e-6);
    }

    #[test]
    fn samples_stay_bounded_and_span_the_whole_input() {
        let mut s = Samples::new(10);
        for i in 0..1000 {
            s.push(i as f32);
        }
        assert!(s.values().len() <= 10, "{}", s.values().len());
        assert_eq!(s.values()[0], 0.0);
        assert!(*s.values().last().unwrap() > 800.0);
        s.push(f32::NAN);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn phases_advance_with_time_and_prompt_reports_progress() {
        static TWO: [Step; 2] = [
            Step {
                id: "neutral",
                title: "Neutral face",
                instruction: "Relax.",
                channels: &[C::JawOpen],
                duration: Duration::from_secs(1),
                kind: StepKind::Neutral,
            },
            extreme("jaw-open", "Jaw open", "Open.", &[C::JawOpen]),
        ];
        let t0 = Instant::now();
        let at = |s: f32| t0 + Duration::from_secs_f32(s);
        let mut r = Routine::with_steps(&TWO, Duration::from_secs(1));
        let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t0);
        f.set(C::JawOpen, 0.3);
        // No face data yet: the routine waits, however long.
        r.tick(t0);
        r.tick(at(5.0));
        assert_eq!(r.prompt().phase, Phase::Waiting);
        assert_eq!(r.prompt().step, 0);
        // The first frame starts the countdown.
        let t0 = at(5.0);
        let at = |s: f32| t0 + Duration::from_secs_f32(s);
        r.feed(&f, t0);
        assert_eq!(r.prompt().phase, Phase::Prepare);
        r.feed(&f, at(0.5));
        assert!((r.prompt().progress - 0.5).abs() < 1e-3);
        r.feed(&f, at(0.6));
        assert_eq!(r.samples(0, C::JawOpen).unwrap().len(), 0);
        r.tick(at(1.0));
        assert_eq!(r.prompt().phase, Phase::Record);
        r.feed(&f, at(1.2));
        assert_eq!(r.samples(0, C::JawOpen).unwrap(), &[0.3]);
        r.feed(&f, at(1.6));
        r.tick(at(2.0));
        assert_eq!(r.prompt().step, 1);
        assert_eq!(r.prompt().phase, Phase::Prepare);
        for i in 0..=80 {
            r.feed(&f, at(2.0 + i as f32 * 0.1));
        }
        assert!(r.is_done());
        assert_eq!(r.prompt().phase, Phase::Finished);
    }

    #[test]
    fn a_phone_that_stops_pauses_the_step_and_it_starts_again() {
        const ONE: [Step; 1] = [Step {
            id: "jaw-open",
            title: "Jaw open",
            instruction: "Open.",
            channels: &[C::JawOpen],
            duration: Duration::from_secs(2),
            kind: StepKind::Neutral,
        }];
        let t0 = Instant::now();
        let at = |s: f32| t0 + Duration::from_secs_f32(s);
        let mut r = Routine::with_steps(&ONE, Duration::from_secs(1));
        let mut f = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:9".parse().unwrap(), t0);
        f.set(C::JawOpen, 0.7);
        for i in 0..=15 {
            r.feed(&f, at(i as f32 * 0.1));
        }
        assert_eq!(r.prompt().phase, Phase::Record);
        assert!(!r.samples(0, C::JawOpen).unwrap().is_empty());
        // The phone stops for a second: the routine waits, and the step's samples are gone.
        r.tick(at(2.1));
        assert_eq!(r.prompt().phase, Phase::Waiting);
        assert!(r.prompt().instruction.contains("stopped sending"));
        assert!(r.samples(0, C::JawOpen).unwrap().is_empty());
        r.tick(at(3.0));
        assert_eq!(
            r.prompt().phase,
            Phase::Waiting,
            "time without data does not count"
        );
        // Frames flagged lost are no face data either.
        let mut lost = f;
        lost.tracking = TrackingFlag::Lost;
        r.feed(&lost, at(3.1));
        assert_eq!(r.prompt().phase, Phase::Waiting);
        // Data again: the step starts over from its countdown and records again.
        for i in 0..=40 {
            r.feed(&f, at(3.5 + i as f32 * 0.1));
        }
        assert!(r.is_done());
        let recorded = r.samples(0, C::JawOpen).unwrap();
        assert!(recorded.len() >= 15, "{}", recorded.len());
    }
}
