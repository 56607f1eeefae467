//! A performer's own vowels: one take of them saying "a, i, u, e, o" with a pause between each
//! (from the microphone or a WAV file), cut into its five voiced stretches, learnt into a
//! [`Voice`]: their vowel means and the levels their microphone gives for silence and speech.

use super::features::{Analyzer, HOP, SAMPLE_RATE, SILENT_DB, WINDOW};
use super::profile::{Profile, VOWELS};
use super::resample::Resampler;
use super::{Level, LipSettings, Viseme};

/// A stretch shorter than this (seconds) is a click or a breath, not a vowel.
const MIN_VOWEL: f64 = 0.15;
/// A dip shorter than this (seconds) inside a vowel does not split it.
const MAX_DIP: f64 = 0.12;
/// Speech is at least this far (dB) above the take's noise.
const ABOVE_NOISE: f32 = 12.0;

/// The prompts of a vowel take and how long each shows: quiet, each vowel with a pause after
/// it, quiet again. Recording them in this rhythm gives [`learn_take`] what it expects.
pub fn prompts() -> Vec<(String, std::time::Duration)> {
    use std::time::Duration;
    let mut out = vec![(
        "Stay quiet for a moment...".to_string(),
        Duration::from_millis(1500),
    )];
    for sound in ["a", "i", "u", "e", "o"] {
        out.push((
            format!("Say  {}", sound.repeat(5)),
            Duration::from_millis(1600),
        ));
        out.push(("(pause)".to_string(), Duration::from_millis(500)));
    }
    out.push((
        "Now stay silent...".to_string(),
        Duration::from_millis(1500),
    ));
    out
}

/// A performer's voice for lip sync: their vowels and their microphone's levels.
#[derive(Debug, Clone, PartialEq)]
pub struct Voice {
    /// Their vowel means.
    pub profile: Profile,
    /// The gate's floor for them: a little above their room's noise, dB full scale.
    pub floor_db: f32,
    /// The level at which their mouth opens fully: a little under their vowels' typical level.
    pub ceiling_db: f32,
}

impl Voice {
    /// `settings` with this voice's gate: where the automatic level starts, or, with
    /// [`Level::Fixed`] (a gate set in the configuration), `settings` as they are.
    pub fn settings(&self, settings: LipSettings) -> LipSettings {
        match settings.level {
            Level::Fixed => settings,
            Level::Auto => LipSettings {
                floor_db: self.floor_db,
                ceiling_db: self.ceiling_db,
                ..settings
            },
        }
    }
}

/// Why a take could not be learnt.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VowelError {
    /// Fewer than five voiced stretches were heard.
    #[error(
        "heard {heard} of the five vowels; say \"a\", \"i\", \"u\", \"e\", \"o\", each for about \
         a second, with a short silence between them{}",
        if *quiet { " (the take is very quiet: move closer to the microphone or raise its gain)" } else { "" }
    )]
    TooFew {
        /// How many stretches there were.
        heard: usize,
        /// Whether the whole take was close to silence.
        quiet: bool,
    },
}

/// Where one vowel of a take lies, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Which vowel.
    pub viseme: Viseme,
    /// Its start.
    pub start: f64,
    /// Its end.
    pub end: f64,
}

/// A learnt take: the voice and where each vowel was heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Take {
    /// What was learnt.
    pub voice: Voice,
    /// The five vowels found, in order.
    pub spans: Vec<Span>,
    /// The take's noise level, dB.
    pub noise_db: f32,
}

/// Each hop's level (dB) of `samples` at 16 kHz.
fn levels(samples16: &[f32]) -> Vec<f32> {
    let mut analyzer = Analyzer::new();
    let mut out = Vec::with_capacity(samples16.len() / HOP + 1);
    let mut start = 0;
    while start + WINDOW <= samples16.len() {
        out.push(
            analyzer
                .analyze(&samples16[start..start + WINDOW])
                .volume_db,
        );
        start += HOP;
    }
    out
}

/// The value below which `share` of `values` lie.
fn percentile(values: &[f32], share: f32) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    let i = ((sorted.len() as f32 - 1.0) * share).round() as usize;
    sorted.get(i).copied().unwrap_or(SILENT_DB)
}

/// Learns a performer's voice from one take of `samples` (mono, `rate` Hz) in which they say
/// the five vowels in order with pauses between them. When more than five stretches are voiced,
/// the five longest are taken, in time order.
pub fn learn_take(samples: &[f32], rate: u32) -> Result<Take, VowelError> {
    let mut samples16 = Vec::with_capacity(samples.len());
    Resampler::new(rate, SAMPLE_RATE).push(samples, &mut samples16);
    let levels = levels(&samples16);
    let hop_s = HOP as f64 / f64::from(SAMPLE_RATE);
    let noise = percentile(&levels, 0.1).max(SILENT_DB);
    let loudest = percentile(&levels, 0.98);
    let threshold = (noise + ABOVE_NOISE).max(-65.0);
    // Voiced stretches, with short dips bridged.
    let mut stretches: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < levels.len() {
        if levels[i] < threshold {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        let mut j = i;
        while j < levels.len() {
            if levels[j] >= threshold {
                end = j;
            } else if (j - end) as f64 * hop_s > MAX_DIP {
                break;
            }
            j += 1;
        }
        stretches.push((start, end + 1));
        i = j;
    }
    stretches.retain(|(s, e)| (e - s) as f64 * hop_s >= MIN_VOWEL);
    if stretches.len() < VOWELS.len() {
        return Err(VowelError::TooFew {
            heard: stretches.len(),
            quiet: loudest < -55.0,
        });
    }
    if stretches.len() > VOWELS.len() {
        stretches.sort_by_key(|(s, e)| std::cmp::Reverse(e - s));
        stretches.truncate(VOWELS.len());
        stretches.sort_by_key(|(s, _)| *s);
    }
    // Each vowel's samples, its edges trimmed (the onset and the fade are not the vowel).
    let trim = (0.05 / hop_s) as usize;
    let spans: Vec<Span> = VOWELS
        .iter()
        .zip(&stretches)
        .map(|(&viseme, &(s, e))| Span {
            viseme,
            start: s as f64 * hop_s,
            end: e as f64 * hop_s + WINDOW as f64 / f64::from(SAMPLE_RATE),
        })
        .collect();
    let recordings: Vec<(Viseme, &[f32])> = VOWELS
        .iter()
        .zip(&stretches)
        .map(|(&viseme, &(s, e))| {
            let (s, e) = if e - s > 4 * trim {
                (s + trim, e - trim)
            } else {
                (s, e)
            };
            let from = (s * HOP).min(samples16.len());
            let to = (e * HOP + WINDOW).min(samples16.len());
            (viseme, &samples16[from..to])
        })
        .collect();
    let profile = Profile::learn(&recordings, SAMPLE_RATE, threshold);
    let voiced: Vec<f32> = stretches
        .iter()
        .flat_map(|&(s, e)| levels[s..e].iter().copied())
        .collect();
    let typical = percentile(&voiced, 0.5);
    let floor_db = (noise + 6.0).clamp(-90.0, -20.0);
    let ceiling_db = (typical - 4.0).clamp(floor_db + 6.0, 0.0);
    Ok(Take {
        voice: Voice {
            profile,
            floor_db,
            ceiling_db,
        },
        spans,
        noise_db: noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buzz with formant-like partials, `seconds` long at `rate`.
    fn buzz(rate: u32, seconds: f64, f0: f32, formants: [f32; 2], level: f32) -> Vec<f32> {
        let n = (seconds * f64::from(rate)) as usize;
        (0..n)
            .map(|i| {
                let t = i as f32 / rate as f32;
                let mut s = 0.0;
                for k in 1..40 {
                    let f = f0 * k as f32;
                    let gain: f32 = formants
                        .iter()
                        .map(|&fm| 1.0 / (1.0 + ((f - fm) / 120.0).powi(2)))
                        .sum();
                    s += gain * (std::f32::consts::TAU * f * t).sin();
                }
                level * s / 4.0
            })
            .collect()
    }

    fn take(rate: u32, pauses: &[f64], noise: f32) -> Vec<f32> {
        let formants = [
            [800.0, 1200.0],
            [300.0, 2300.0],
            [350.0, 1300.0],
            [500.0, 1900.0],
            [500.0, 900.0],
        ];
        let mut out = Vec::new();
        let mut seed = 1u32;
        let mut hiss = |n: usize, out: &mut Vec<f32>| {
            for _ in 0..n {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                out.push(noise * ((seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5));
            }
        };
        for (f, pause) in formants.iter().zip(pauses) {
            hiss((pause * f64::from(rate)) as usize, &mut out);
            out.extend(buzz(rate, 0.8, 140.0, *f, 0.3));
        }
        hiss(rate as usize / 2, &mut out);
        out
    }

    #[test]
    fn five_vowels_with_pauses_are_found_in_order() {
        let rate = 44_100;
        let samples = take(rate, &[0.5, 0.4, 0.6, 0.3, 0.5], 0.002);
        let t = learn_take(&samples, rate).unwrap();
        assert_eq!(t.spans.len(), 5);
        let mut at = 0.0;
        for (span, (viseme, pause)) in t
            .spans
            .iter()
            .zip(VOWELS.iter().zip([0.5, 0.4, 0.6, 0.3, 0.5]))
        {
            at += pause;
            assert_eq!(span.viseme, *viseme);
            assert!((span.start - at).abs() < 0.06, "{span:?} starts near {at}");
            assert!(
                (span.end - (at + 0.8)).abs() < 0.08,
                "{span:?} ends near {}",
                at + 0.8
            );
            at += 0.8;
        }
        // The gate sits between the hiss and the vowels.
        assert!(t.voice.floor_db > t.noise_db && t.voice.floor_db < t.voice.ceiling_db);
        // The learnt profile tells its own vowels apart.
        let settings = t.voice.settings(LipSettings::default());
        let frames = crate::lipsync::analyze(&samples, rate, t.voice.profile.clone(), settings);
        for span in &t.spans {
            let mid = (span.start + span.end) / 2.0;
            let f = frames.iter().find(|f| f.t >= mid).unwrap();
            assert_eq!(f.viseme, span.viseme, "at {mid}");
        }
    }

    #[test]
    fn too_few_vowels_or_a_silent_take_say_what_to_do() {
        let rate = 16_000;
        let mut samples = take(rate, &[0.5, 0.4, 0.6, 0.3, 0.5], 0.002);
        samples.truncate((2.9 * f64::from(rate)) as usize);
        let err = learn_take(&samples, rate).unwrap_err();
        assert_eq!(
            err,
            VowelError::TooFew {
                heard: 2,
                quiet: false
            }
        );
        assert!(
            err.to_string().contains("short silence between them"),
            "{err}"
        );
        let err = learn_take(&vec![0.0; rate as usize * 5], rate).unwrap_err();
        assert!(matches!(
            err,
            VowelError::TooFew {
                heard: 0,
                quiet: true
            }
        ));
        assert!(err.to_string().contains("closer to the microphone"));
    }
}
