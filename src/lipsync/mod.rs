//! Lip sync from audio: the microphone (or a WAV file) to mouth shapes, in ARKit space like the
//! phone's frames, for the mixer.
//!
//! - [`resample`]: any input rate to 16 kHz.
//! - [`features`]: each 32 ms window (16 ms apart) to its level and 12 MFCCs.
//! - [`profile`]: a voice's five vowels and the classification of a window against them.
//! - [`wav`]: WAV files as mono samples.
//! - [`calibration`]: a performer's own vowels from one take of them.
//! - [`face`]: visemes to ARKit mouth channels, and the lip-sync layer of the mixer.
//! - [`plot`]: a picture of the analysis over time, for `facewire lipsync --plot`.
//! - [`labels`]: phone-labelled speech and what lip sync shows for each class of phone.
//! - [`latency`]: how quickly the mouth answers a sound, in audio time, and a vowel-like test
//!   signal to measure it with.
//! - [`LipSync`] puts them together with a volume gate and smoothing that holds each shape long
//!   enough to read.

pub mod calibration;
pub mod face;
pub mod features;
pub mod labels;
pub mod latency;
pub mod plot;
pub mod profile;
pub mod resample;
mod section;
pub mod wav;

use features::{Analyzer, HOP, SAMPLE_RATE, WINDOW};
use profile::{Profile, VOWELS};
use resample::Resampler;

pub use crate::arkit::{Viseme, VISEMES};
pub use section::LipsyncConfig;

/// Seconds after a sound's onset in which the vowel read may change without waiting for the
/// hold: the first few hops, whose windows still hold the attack.
const ONSET_GRACE: f64 = 0.05;

/// How lip sync mixes with the phone's tracking (`[lipsync] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LipMode {
    /// No lip sync; the microphone stays closed.
    Off,
    /// The audio drives the mouth only while the phone does not see a face.
    #[default]
    WhenLost,
    /// The jaw and mouth open as far as the larger of phone and audio; the phone keeps the
    /// lips' shape.
    Blend,
    /// The audio owns the mouth and jaw.
    Always,
}

impl LipMode {
    /// The name used in `facewire.toml`.
    pub fn name(self) -> &'static str {
        match self {
            LipMode::Off => "off",
            LipMode::WhenLost => "when_lost",
            LipMode::Blend => "blend",
            LipMode::Always => "always",
        }
    }
}

/// Where the gate's floor and ceiling come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// Follow the voice: the ceiling tracks the speaker's recent peaks and the floor the
    /// room's noise, starting from `floor_db` and `ceiling_db` ([`AutoLevel`]).
    #[default]
    Auto,
    /// Exactly `floor_db` and `ceiling_db`.
    Fixed,
}

/// How loud is speech, and how the shapes move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LipSettings {
    /// Below this level (dB full scale) the mouth is at rest (with [`Level::Auto`], where the
    /// automatic level starts).
    pub floor_db: f32,
    /// At and above this level the mouth opens fully (with [`Level::Auto`], where the
    /// automatic level starts).
    pub ceiling_db: f32,
    /// Whether the gate follows the voice or stays where it is set.
    pub level: Level,
    /// Seconds a shape takes to rise most of the way (a time constant).
    pub attack: f32,
    /// Seconds a shape takes to fall most of the way.
    pub release: f32,
    /// The shortest time one vowel is shown before another may take over, seconds.
    pub hold: f32,
}

impl Default for LipSettings {
    fn default() -> Self {
        LipSettings {
            floor_db: -50.0,
            ceiling_db: -30.0,
            level: Level::Auto,
            attack: 0.03,
            release: 0.08,
            hold: 0.1,
        }
    }
}

/// How fast the followed peak sinks while the voice is quieter than it, dB a second: a loud
/// laugh stops setting the scale after a few seconds, and a quiet microphone is followed down
/// within a few seconds of speech.
const PEAK_DECAY_DB_S: f32 = 10.0;
/// How fast it sinks in a pause, dB a second: pauses do not bring the ceiling down to the
/// room's noise.
const PEAK_DECAY_PAUSE_DB_S: f32 = 1.0;
/// How fast the room's noise estimate rises while the level stays above it, dB a second
/// (it falls at once to anything quieter).
const NOISE_RISE_DB_S: f32 = 3.0;
/// The quietest noise floor assumed, dB full scale: digital silence is not a room.
const NOISE_MIN_DB: f32 = -80.0;
/// The ceiling's distance below the followed peak, dB: ordinary syllables open fully.
const CEILING_BELOW_PEAK_DB: f32 = 4.0;
/// The floor's distance below the ceiling at most, dB: sounds this far below the voice's
/// peaks (the closure of p, b and m, the murmur of a nasal) leave the mouth nearly closed.
const SPAN_DB: f32 = 20.0;
/// The floor's distance above the room's noise at least, dB.
const FLOOR_ABOVE_NOISE_DB: f32 = 8.0;
/// The narrowest gate, dB.
const MIN_SPAN_DB: f32 = 8.0;

/// The automatic level: the speaker's recent peaks and the room's noise, followed hop by hop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoLevel {
    /// The followed peak, dB full scale.
    peak: f32,
    /// The room's noise, dB full scale.
    noise: f32,
}

impl AutoLevel {
    /// A level that starts from a gate from `floor_db` to `ceiling_db`.
    pub fn new(floor_db: f32, ceiling_db: f32) -> AutoLevel {
        AutoLevel {
            peak: ceiling_db + CEILING_BELOW_PEAK_DB,
            noise: (floor_db - FLOOR_ABOVE_NOISE_DB).max(NOISE_MIN_DB),
        }
    }

    /// Takes one window's level (dB) `dt` seconds after the last and returns the gate, floor
    /// and ceiling in dB.
    pub fn update(&mut self, level_db: f32, dt: f32) -> (f32, f32) {
        let level = level_db.max(NOISE_MIN_DB);
        if level < self.noise {
            self.noise = level;
        } else {
            self.noise += NOISE_RISE_DB_S * dt;
        }
        // Only a sound well above the room's noise counts as the voice.
        if level > self.noise + FLOOR_ABOVE_NOISE_DB + MIN_SPAN_DB {
            self.peak = (self.peak - PEAK_DECAY_DB_S * dt).max(level);
        } else {
            self.peak -= PEAK_DECAY_PAUSE_DB_S * dt;
        }
        self.noise = self
            .noise
            .min(self.peak - CEILING_BELOW_PEAK_DB - MIN_SPAN_DB - FLOOR_ABOVE_NOISE_DB);
        self.gate()
    }

    /// The gate as it stands: floor and ceiling, dB.
    pub fn gate(&self) -> (f32, f32) {
        let ceiling = self.peak - CEILING_BELOW_PEAK_DB;
        let floor = (self.noise + FLOOR_ABOVE_NOISE_DB)
            .max(ceiling - SPAN_DB)
            .min(ceiling - MIN_SPAN_DB);
        (floor, ceiling)
    }
}

/// How fast the recent peak that closures are measured against sinks, dB a second: a vowel
/// fading out, or a quieter syllable after a stressed one, is no closure; the level falling
/// from a vowel into a stop's silence or a nasal's murmur within a few hops is.
const DIP_DECAY_DB_S: f32 = 40.0;
/// A level this far below the recent peak starts closing the lips, dB.
const DIP_START_DB: f32 = 4.0;
/// A level this far below the recent peak closes them, dB.
const DIP_FULL_DB: f32 = 10.0;
/// Seconds the mouth takes to close most of the way during a closure (the release is for a
/// vowel ending, and slower).
const CLOSING_RELEASE: f32 = 0.01;

/// The closure detector: how far the level has dropped below its recent peak. Measured on
/// labelled speech (`examples/lipsync_phones.rs`, BENCHMARKS.md), it halves the opening during
/// p, b and m against an open vowel's, where loudness alone left them two thirds as open.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dip {
    /// The recent peak, dB full scale.
    peak: f32,
}

impl Dip {
    /// Takes one window's level `dt` seconds after the last and returns how closed the lips
    /// are, 0 (open as the gate says) to 1 (closed).
    fn update(&mut self, level_db: f32, dt: f32) -> f32 {
        self.peak = (self.peak - DIP_DECAY_DB_S * dt).max(level_db);
        ((self.peak - level_db - DIP_START_DB) / (DIP_FULL_DB - DIP_START_DB)).clamp(0.0, 1.0)
    }
}

/// One analysis step's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LipFrame {
    /// Seconds of audio analysed so far (the end of the window).
    pub t: f64,
    /// The window's level, dB full scale.
    pub volume_db: f32,
    /// The shape shown: `sil` when quiet, else the vowel held.
    pub viseme: Viseme,
    /// Each viseme's smoothed weight, 0 to 1, in [`Viseme::ALL`] order.
    pub weights: [f32; VISEMES],
    /// The gate in use for this hop, floor and ceiling in dB.
    pub gate: (f32, f32),
    /// How closed the closure detector holds the lips, 0 to 1 (a stop's closure or a nasal's
    /// murmur: the level fallen well below its recent peak, though above the gate's floor).
    pub closure: f32,
}

impl LipFrame {
    /// The jaw opening, 0 to 1, that the lip-sync layer applies for this hop (`jawOpen` of
    /// [`face::mouth_pose`] of its weights).
    pub fn open(&self) -> f32 {
        face::mouth_pose(&self.weights)
            .iter()
            .find(|(c, _)| *c == crate::arkit::Channel::JawOpen)
            .map_or(0.0, |(_, v)| *v)
    }
}

/// Audio in, [`LipFrame`]s out, one per 16 ms hop.
#[derive(Debug)]
pub struct LipSync {
    resampler: Resampler,
    analyzer: Analyzer,
    profile: Profile,
    settings: LipSettings,
    /// 16 kHz samples not yet analysed to the end.
    pending: Vec<f32>,
    /// 16 kHz samples dropped from the front of `pending` so far.
    consumed: u64,
    weights: [f32; VISEMES],
    /// The vowel held and since when (seconds).
    held: (Viseme, f64),
    /// When the sound began (seconds): for [`ONSET_GRACE`] after it, the first reading may be
    /// corrected without waiting for the hold.
    onset: f64,
    /// The automatic level, with [`Level::Auto`].
    level: AutoLevel,
    /// The closure detector.
    dip: Dip,
}

impl LipSync {
    /// Lip sync of audio at `rate` Hz with `profile` and `settings`.
    pub fn new(rate: u32, profile: Profile, settings: LipSettings) -> LipSync {
        LipSync {
            resampler: Resampler::new(rate, SAMPLE_RATE),
            analyzer: Analyzer::new(),
            profile,
            settings,
            pending: Vec::with_capacity(4 * WINDOW),
            consumed: 0,
            weights: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            held: (Viseme::Sil, f64::NEG_INFINITY),
            onset: f64::NEG_INFINITY,
            level: AutoLevel::new(settings.floor_db, settings.ceiling_db),
            dip: Dip {
                peak: f32::NEG_INFINITY,
            },
        }
    }

    /// Takes `samples` (mono, -1 to 1) and calls `each` for every hop they complete.
    pub fn push(&mut self, samples: &[f32], mut each: impl FnMut(LipFrame)) {
        self.resampler.push(samples, &mut self.pending);
        let mut start = 0;
        while start + WINDOW <= self.pending.len() {
            let features = self.analyzer.analyze(&self.pending[start..start + WINDOW]);
            let t = (self.consumed + (start + WINDOW) as u64) as f64 / f64::from(SAMPLE_RATE);
            each(self.step(t, features));
            start += HOP;
        }
        self.pending.drain(..start);
        self.consumed += start as u64;
    }

    /// One hop: the gate, the classification, the hold and the smoothing.
    fn step(&mut self, t: f64, features: features::Features) -> LipFrame {
        let s = self.settings;
        let dt = HOP as f32 / SAMPLE_RATE as f32;
        let (floor, ceiling) = match s.level {
            Level::Auto => self.level.update(features.volume_db, dt),
            Level::Fixed => (s.floor_db, s.ceiling_db),
        };
        let span = (ceiling - floor).max(1.0);
        // Below the floor the gate closes the mouth already; the closure counts above it.
        let closure = self.dip.update(features.volume_db, dt)
            * f32::from(u8::from(features.volume_db > floor));
        let loudness = ((features.volume_db - floor) / span).clamp(0.0, 1.0) * (1.0 - closure);
        let scores = self.profile.scores(&features.mfcc);
        if loudness > 0.0 {
            let (best, _) = scores
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .unwrap_or((0, &0.0));
            let best = VOWELS[best];
            let (held, since) = self.held;
            if held == Viseme::Sil {
                self.onset = t;
            }
            // The first windows of a sound hold its attack, which often reads as another
            // vowel: they may be corrected at once; after that a shape is held long enough to
            // be seen.
            let settling = t - self.onset < ONSET_GRACE;
            if held != best && (held == Viseme::Sil || settling || t - since >= f64::from(s.hold)) {
                self.held = (best, t);
            }
        } else if self.held.0 != Viseme::Sil {
            self.held = (Viseme::Sil, t);
        }
        let mut target = [0.0f32; VISEMES];
        target[Viseme::Sil.index()] = 1.0 - loudness;
        if self.held.0 != Viseme::Sil {
            target[self.held.0.index()] = loudness;
        }
        for (w, t) in self.weights.iter_mut().zip(target) {
            let release = s.release + (CLOSING_RELEASE.min(s.release) - s.release) * closure;
            let tau = if t > *w { s.attack } else { release }.max(1e-3);
            *w += (t - *w) * (1.0 - (-dt / tau).exp());
        }
        LipFrame {
            t,
            volume_db: features.volume_db,
            viseme: if loudness > 0.0 {
                self.held.0
            } else {
                Viseme::Sil
            },
            weights: self.weights,
            gate: (floor, ceiling),
            closure,
        }
    }
}

/// Analyses a whole recording: every hop's frame.
pub fn analyze(
    samples: &[f32],
    rate: u32,
    profile: Profile,
    settings: LipSettings,
) -> Vec<LipFrame> {
    let mut sync = LipSync::new(rate, profile, settings);
    let mut frames = Vec::with_capacity(samples.len() / HOP + 1);
    sync.push(samples, |f| frames.push(f));
    frames
}

#[cfg(test)]
mod tests {
    use super::latency::{buzz, openness};
    use super::*;

    /// `lead` seconds of syllables (a quarter second of `o`, a vowel-like buzz, at `peak`,
    /// then a tenth of silence, over and over) and half a second of silence, then `a` at
    /// `peak`, `gap` seconds at a tenth of its level (20 dB down, a nasal's murmur, above the
    /// gate's floor), and `a` again; 48 kHz. The `a`s start `lead` + 0.5 s
    /// and `lead` + 0.88 s in (`lead` a multiple of 0.35 s).
    fn a_closure_a(peak: f32, lead: f64, gap: f64) -> Vec<f32> {
        let a = buzz(48_000, 0.3, 130.0, [750.0, 1200.0], peak);
        let o = buzz(48_000, 0.25, 120.0, [500.0, 900.0], peak);
        let mut out = Vec::new();
        for _ in 0..(lead / 0.35).round() as usize {
            out.extend(&o);
            out.extend(vec![0.0; 4_800]);
        }
        out.extend(vec![0.0; 24_000]);
        out.extend(&a);
        out.extend(
            buzz(48_000, gap, 130.0, [300.0, 900.0], peak)
                .iter()
                .map(|s| s * 0.1),
        );
        out.extend(&a);
        out
    }

    /// The largest and the smallest openness of frames whose window ends within `from` to `to`.
    fn span(frames: &[LipFrame], from: f64, to: f64) -> (f32, f32) {
        frames
            .iter()
            .filter(|f| f.t > from && f.t <= to)
            .map(openness)
            .fold((0.0f32, 1.0f32), |(hi, lo), o| (hi.max(o), lo.min(o)))
    }

    #[test]
    fn the_mouth_closes_in_a_closure_inside_a_word_and_opens_again() {
        for settings in [
            LipSettings::default(),
            LipSettings {
                level: Level::Fixed,
                ..LipSettings::default()
            },
        ] {
            let frames = analyze(
                &a_closure_a(0.5, 0.0, 0.08),
                48_000,
                Profile::default(),
                settings,
            );
            let (first, _) = span(&frames, 0.6, 0.8);
            // The closure: 0.8 to 0.88 s, seen by windows ending up to 32 ms later.
            let (_, closed) = span(&frames, 0.82, 0.9);
            let (second, _) = span(&frames, 1.0, 1.18);
            assert!(
                first > 0.9 && second > 0.9,
                "{:?}: {first} {second}",
                settings.level
            );
            assert!(
                closed < 0.2,
                "{:?}: {closed} during the closure",
                settings.level
            );
            let deepest = frames
                .iter()
                .filter(|f| f.t > 0.82 && f.t <= 0.9)
                .map(|f| f.closure)
                .fold(0.0f32, f32::max);
            assert!(deepest > 0.9, "{:?}: closure {deepest}", settings.level);
            // The hold does not keep the vowel through the closure.
            assert!(frames
                .iter()
                .any(|f| f.t > 0.82 && f.t <= 0.9 && f.viseme == Viseme::Sil));
        }
    }

    #[test]
    fn the_automatic_level_opens_a_quiet_voice_as_far_as_a_loud_one() {
        // After four seconds of speech.
        let open_at = |peak: f32, level: Level| {
            let settings = LipSettings {
                level,
                ..LipSettings::default()
            };
            let samples = a_closure_a(peak, 4.2, 0.08);
            let frames = analyze(&samples, 48_000, Profile::default(), settings);
            (span(&frames, 5.2, 5.38).0, frames)
        };
        // 0.5 peaks near -9 dB, 0.005 40 dB lower (a quiet microphone far away).
        let (loud, _) = open_at(0.5, Level::Auto);
        let (quiet, frames) = open_at(0.005, Level::Auto);
        assert!(loud > 0.9 && quiet > 0.9, "loud {loud}, quiet {quiet}");
        // The gate came down to the quiet voice: its ceiling within a few dB of its level.
        let last = frames.last().unwrap();
        assert!(last.gate.1 < -40.0, "gate {:?}", last.gate);
        assert!(last.gate.0 < last.gate.1 - 7.0, "gate {:?}", last.gate);
        // A fixed gate leaves the quiet voice's mouth shut.
        let (fixed, _) = open_at(0.005, Level::Fixed);
        assert!(fixed < 0.1, "fixed gate: {fixed}");
    }

    #[test]
    fn the_room_noise_never_opens_the_mouth() {
        // A steady hiss at -60 dB for three seconds: the floor follows it up but stays above.
        let mut state = 1u32;
        let hiss: Vec<f32> = (0..144_000)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 * 0.002 - 0.001
            })
            .collect();
        let frames = analyze(&hiss, 48_000, Profile::default(), LipSettings::default());
        assert!(frames.iter().all(|f| openness(f) < 0.05));
        assert!(frames
            .iter()
            .all(|f| f.gate.0.is_finite() && f.gate.1 > f.gate.0));
    }
}
