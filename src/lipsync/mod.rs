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
//! - [`latency`]: how quickly the mouth answers a sound, in audio time, and a vowel-like test
//!   signal to measure it with.
//! - [`LipSync`] puts them together with a volume gate and smoothing that holds each shape long
//!   enough to read.

pub mod calibration;
pub mod face;
pub mod features;
pub mod latency;
pub mod plot;
pub mod profile;
pub mod resample;
pub mod wav;

use features::{Analyzer, HOP, SAMPLE_RATE, WINDOW};
use profile::{Profile, VOWELS};
use resample::Resampler;

pub use crate::arkit::{Viseme, VISEMES};

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

/// How loud is speech, and how the shapes move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LipSettings {
    /// Below this level (dB full scale) the mouth is at rest.
    pub floor_db: f32,
    /// At and above this level the mouth opens fully.
    pub ceiling_db: f32,
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
            attack: 0.03,
            release: 0.08,
            hold: 0.1,
        }
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
        let span = (s.ceiling_db - s.floor_db).max(1.0);
        let loudness = ((features.volume_db - s.floor_db) / span).clamp(0.0, 1.0);
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
        let dt = HOP as f32 / SAMPLE_RATE as f32;
        for (w, t) in self.weights.iter_mut().zip(target) {
            let tau = if t > *w { s.attack } else { s.release }.max(1e-3);
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
